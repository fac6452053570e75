package core

import "cmp"

// Prices is the input price model the usage report bills requests with
// (CacheConfig.Prices): a base price per million input tokens and the
// multipliers of cache reads and writes. The zero value is Anthropic's
// list price for its Sonnet models: $3 per million, reads 0.1x, 5-minute
// writes 1.25x. Package pricing has the tables of the providers' models.
type Prices struct {
	// Currency names the unit of InputPerMTok; "" means "USD".
	Currency string
	// InputPerMTok is the base price of a million input tokens.
	InputPerMTok float64
	// ReadMult and WriteMult price cached reads and cache writes against
	// the base price (OpenAI: 0.1 or 0.25 and 1, no write premium).
	ReadMult, WriteMult float64
}

func (p Prices) resolved() Prices {
	return Prices{Currency: cmp.Or(p.Currency, "USD"), InputPerMTok: cmp.Or(p.InputPerMTok, 3),
		ReadMult: cmp.Or(p.ReadMult, 0.1), WriteMult: cmp.Or(p.WriteMult, 1.25)}
}

// RequestCost is what the provider billed for the input of one model call
// (Usage.Cost of the next assembly), split by band: the cache report's
// read tokens are the front of the request, its writes follow, and the
// rest was billed uncached, band by band in view order.
type RequestCost struct {
	Currency string
	// Total is the input's cost; Bands the cost of each band's tokens.
	Total float64
	Bands [BandTail + 1]float64
	// BaseEquivalent is the input in base-price tokens.
	BaseEquivalent float64
}

// costOf bills the request made with the view whose band sizes are
// tokens, as r reports it. The provider counts its own tokens: what it
// counts past the view's (the tool schemas, its framing) is put in the
// system band, which the tools travel with; a smaller count scales the
// bands down. The total is exactly the report's.
func costOf(p Prices, tokens [BandTail + 1]int, r CacheReport) *RequestCost {
	p = p.resolved()
	c := &RequestCost{Currency: p.Currency}
	provider := r.ReadTokens + r.WriteTokens + r.UncachedTokens
	ours := 0
	for _, n := range tokens {
		ours += n
	}
	sizes := tokens
	switch {
	case provider > ours:
		sizes[BandSystem] += provider - ours
	case provider < ours && ours > 0:
		left := provider
		for b := range sizes {
			sizes[b] = tokens[b] * provider / ours
			left -= sizes[b]
		}
		sizes[BandSystem] += left // rounding
	}
	read, write := r.ReadTokens, r.WriteTokens
	for b, n := range sizes {
		fromRead := min(n, read)
		read -= fromRead
		fromWrite := min(n-fromRead, write)
		write -= fromWrite
		eq := float64(fromRead)*p.ReadMult + float64(fromWrite)*p.WriteMult + float64(n-fromRead-fromWrite)
		c.Bands[b] = eq * p.InputPerMTok / 1e6
		c.BaseEquivalent += eq
		c.Total += c.Bands[b]
	}
	return c
}
