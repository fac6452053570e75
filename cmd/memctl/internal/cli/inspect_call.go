package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/projector"
	"github.com/stratamem/strata/storage"
)

// What the host reported of the model call made with a view: the cache
// miss the runtime attributed (core.MissAttribution) and the input's cost
// by band (core.RequestCost). The runtime learns of them only after the
// call, with Session.ReportCache, and puts them in the usage report of the
// next assembly (Usage.Miss, Usage.Cost); memctl shows them with the turn
// whose call they are about, as core/inspect does the cache report
// (AssemblyRecord.Cache): turn N's are read from the record of turn N+1 of
// the same run. The newest turn's call has none recorded yet, so the
// last-turn view shows those of the call before it, saying so.

// callReport is what memctl shows of one call (--json: "call", or
// "previous_call" for the last-turn view).
type callReport struct {
	// Miss is nil when the call read the cache, or was not reported.
	Miss *missReport `json:"miss,omitempty"`
	Cost *costReport `json:"cost,omitempty"`
}

type missReport struct {
	// Cause is core.MissCause: changed, ttl_expired, below_minimum,
	// lookback, evicted.
	Cause string `json:"cause"`
	// Band and Layer say where the bytes changed first (cause changed).
	Band  string `json:"band,omitempty"`
	Layer string `json:"layer,omitempty"`
	// ProviderReason and ProviderDetail are the provider's own account.
	ProviderReason string `json:"provider_reason,omitempty"`
	ProviderDetail string `json:"provider_detail,omitempty"`
	// MissedTokens is the input the provider says it could not serve from
	// its cache (0: not said); PrefixTokens the cacheable prefix.
	MissedTokens int `json:"missed_tokens,omitempty"`
	PrefixTokens int `json:"prefix_tokens,omitempty"`
}

type costReport struct {
	Currency string  `json:"currency"`
	Total    float64 `json:"total"`
	// BaseEquivalentTokens is the input in base-price tokens.
	BaseEquivalentTokens float64    `json:"base_equivalent_tokens"`
	Bands                []bandCost `json:"bands"`
}

type bandCost struct {
	Band string  `json:"band"`
	Cost float64 `json:"cost"`
}

// newCallReport reads a call's report from u, the usage report of the
// assembly after it, and cache, the call's cache report (nil: none). It
// returns nil when there is nothing to show.
func newCallReport(u *core.Usage, cache *core.CacheReport) *callReport {
	if u == nil || u.Miss == nil && u.Cost == nil {
		return nil
	}
	c := &callReport{}
	if m := u.Miss; m != nil {
		c.Miss = &missReport{Cause: string(m.Cause), Layer: m.Layer, ProviderReason: string(m.Provider), PrefixTokens: m.PrefixTokens}
		if m.Cause == core.CauseChanged {
			c.Miss.Band = projector.Band(m.Band).String()
		}
		if cache != nil && cache.Miss != nil {
			c.Miss.ProviderDetail, c.Miss.MissedTokens = cache.Miss.Detail, cache.Miss.MissedTokens
		}
	}
	if k := u.Cost; k != nil {
		c.Cost = &costReport{Currency: k.Currency, Total: k.Total, BaseEquivalentTokens: k.BaseEquivalent, Bands: []bandCost{}}
		for b, v := range k.Bands {
			if v != 0 {
				c.Cost.Bands = append(c.Cost.Bands, bandCost{Band: projector.Band(b).String(), Cost: v})
			}
		}
	}
	return c
}

// turnCall reads the report of the call made with turn's view (rec, of
// run runID) from the thread's next record: nil when there is none yet,
// or it belongs to another run (whose runtime knew nothing of this call).
func turnCall(ctx context.Context, st storage.Store, resource, thread string, rec *inspect.Plan) (*callReport, error) {
	next, err := inspect.ReadAssembly(ctx, st, resource, thread, rec.Turn+1)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if next.RunID != rec.RunID {
		return nil, nil
	}
	return newCallReport(next.Usage, rec.Cache), nil
}

// short is the miss as a table cell: its cause, with the band (and
// layer) that changed.
func (m *missReport) short() string {
	switch {
	case m == nil:
		return "-"
	case m.Band != "" && m.Layer != "":
		return m.Cause + ":" + m.Band + "/" + m.Layer
	case m.Band != "":
		return m.Cause + ":" + m.Band
	}
	return m.Cause
}

func money(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }

// printCall prints a call's report under what (e.g. "This turn's call").
// hit says the call was reported and read the cache (no miss to show).
func (a *app) printCall(w io.Writer, what string, c *callReport, hit bool) error {
	if c == nil {
		return nil
	}
	if m := c.Miss; m != nil {
		fmt.Fprintf(w, "%s: cache miss\n", esc(what))
		dash := func(s string) string {
			if s == "" {
				return "-"
			}
			return cell(oneLine(s))
		}
		count := func(n int) string {
			if n == 0 {
				return "-"
			}
			return strconv.Itoa(n)
		}
		// 80 columns: the provider's detail and the prefix go first.
		if err := fitTableIndent(w, a.width(), "  ", []column{{name: "CAUSE"}, {name: "BAND"}, {name: "LAYER", min: 8}, {name: "PROVIDER", min: 8},
			{name: "DETAIL", min: 6, drop: 2}, {name: "MISSED", right: true}, {name: "PREFIX", right: true, drop: 1}},
			[][]string{{cell(m.Cause), dash(m.Band), dash(m.Layer), dash(m.ProviderReason), dash(m.ProviderDetail), count(m.MissedTokens), count(m.PrefixTokens)}}); err != nil {
			return err
		}
	} else if hit {
		fmt.Fprintf(w, "%s: no cache miss\n", esc(what))
	}
	if k := c.Cost; k != nil {
		fmt.Fprintf(w, "%s: input cost %s %s (%.0f base-price tokens)\n", esc(what), money(k.Total), esc(k.Currency), k.BaseEquivalentTokens)
		rows := make([][]string, 0, len(k.Bands))
		for _, b := range k.Bands {
			share := "-"
			if k.Total > 0 {
				share = strconv.FormatFloat(100*b.Cost/k.Total, 'f', 1, 64) + "%"
			}
			rows = append(rows, []string{cell(b.Band), money(b.Cost), share})
		}
		if len(rows) > 0 {
			return fitTableIndent(w, a.width(), "  ", []column{{name: "BAND"}, {name: "COST", right: true}, {name: "SHARE", right: true}}, rows)
		}
	}
	return nil
}
