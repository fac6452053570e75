package cachebench

import (
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"
)

// configName is how the report names a series' layer configuration.
func configName(s *Series) string {
	if s.Variant == "" {
		return "shipped"
	}
	return s.Variant
}

// configs returns, for provider p, the anchored series of the workload's
// own layers followed by its variants', skipping those not run.
func configs(r *Result, p Provider) []*Series {
	var out []*Series
	if s := r.Get(Anchored, p); s != nil {
		out = append(out, s)
	}
	for _, v := range r.Workload.Variants {
		if s := r.Variant(v.Name, p); s != nil {
			out = append(out, s)
		}
	}
	return out
}

// layerUpdates counts the requests of s that published a context update
// for layer, and the tokens of those update messages.
func layerUpdates(s *Series, layer string) (n, tokens int) {
	for _, l := range s.Log {
		if slices.Contains(l.Updates, layer) {
			n++
			tokens += l.UpdateTokens
		}
	}
	return n, tokens
}

// writeVariants compares the workload's own configuration with its
// variants, each run anchored on the same script.
func writeVariants(b *strings.Builder, r *Result) {
	if len(r.Variants) == 0 {
		return
	}
	layer := r.Workload.Variants[0].Layer
	b.WriteString("### Layer configurations compared\n\n")
	fmt.Fprintf(b, "The same script replayed with the anchored strategy and the %s layer configured otherwise, each against this workload's optimum "+
		"(the facts, and so the information, are the same in every configuration):\n\n", layer)
	b.WriteString("- **shipped**: the configuration described above.\n")
	for _, v := range r.Workload.Variants {
		fmt.Fprintf(b, "- **%s**: %s.\n", v.Name, v.Description)
	}
	fmt.Fprintf(b, "\nWarm non-read is the mean written + uncached tokens of the requests that follow the previous one within the cache lifetime (%s) "+
		"and start no epoch: what a configuration costs while the cache is warm, apart from the pauses that expire it. "+
		"Updates counts the requests that published a context update for %s, and the tokens of those messages.\n\n", fmtMinutes(CacheLifetime), layer)
	b.WriteString("| configuration | provider | hit ratio | hit / optimum | billed (base-token eq.) | $ | billed / shipped's | warm non-read per request | updates (tokens) | re-anchors |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, p := range AllProviders() {
		opt := r.Get(Optimum, p)
		rows := configs(r, p)
		if len(rows) == 0 {
			continue
		}
		shipped := r.Get(Anchored, p)
		for _, s := range rows {
			vs := ""
			if shipped != nil && shipped.Totals.BaseEquivalent > 0 {
				vs = fmt.Sprintf("%.3f", s.Totals.BaseEquivalent/shipped.Totals.BaseEquivalent)
			}
			warm, _ := s.WarmNonRead()
			n, tok := layerUpdates(s, layer)
			fmt.Fprintf(b, "| %s | %s | %.3f | %s | %s | %.2f | %s | %.0f | %d (%s) | %s |\n", configName(s), p, s.Totals.HitRatio(), hitShare(s, opt),
				thousands(s.Totals.BaseEquivalent), s.Totals.Cost, vs, warm, n, thousands(float64(tok)), reanchors(s))
		}
	}
	b.WriteString("\n")
}

// dayChanges returns the indexes into s.Log of the requests whose calendar
// date differs from the previous request's.
func dayChanges(s *Series) []int {
	var out []int
	for i := 1; i < len(s.Log); i++ {
		if s.Log[i].Day != s.Log[i-1].Day {
			out = append(out, i)
		}
	}
	return out
}

// shipped yields, provider by provider, the series of the shipped
// configuration (Anchored), skipping the providers it did not run on.
func shipped(r *Result) iter.Seq2[Provider, *Series] {
	return func(yield func(Provider, *Series) bool) {
		for _, p := range AllProviders() {
			if s := r.Get(Anchored, p); s != nil && !yield(p, s) {
				return
			}
		}
	}
}

// writeDays reports, when the run crossed midnight, what each day change
// cost the shipped configuration, how many re-anchors the day changes
// caused in every configuration, and what the resumptions after a pause
// cost by the pins their cache-miss re-anchor moved.
func writeDays(b *strings.Builder, r *Result) {
	crossed := false
	for _, s := range shipped(r) {
		if len(dayChanges(s)) > 0 {
			crossed = true
		}
	}
	if !crossed {
		return
	}
	nonRead := func(l RequestLog) string {
		return fmt.Sprintf("%s / %s", thousands(float64(l.NonRead())), thousands(float64(l.Usage.InputTokens())))
	}
	b.WriteString("### Day changes\n\n")
	fmt.Fprintf(b, "The requests of the shipped configuration whose calendar date differs from the previous request's: there the ledger's today moves on. "+
		"Inside a burst means less than the cache lifetime (%s) after the previous request. The next request is the one after; "+
		"after a pause the epoch re-anchors on the resumption request itself (see below).\n\n", fmtMinutes(CacheLifetime))
	b.WriteString("| provider | request | at | since previous | inside a burst | re-anchored | update from | update tokens | non-read / input | next request: re-anchor, non-read / input |\n")
	b.WriteString("|---|---:|---|---:|---|---|---|---:|---:|---|\n")
	for p, s := range shipped(r) {
		for _, i := range dayChanges(s) {
			l := s.Log[i]
			next := "none"
			if i+1 < len(s.Log) {
				n := s.Log[i+1]
				next = "no, " + nonRead(n)
				if n.Reanchored {
					next = n.Reason + ", " + nonRead(n)
				}
			}
			re := "no"
			if l.Reanchored {
				re = l.Reason
			}
			fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %d | %s | %s |\n", p, l.Index, l.At.Format("Mon 15:04:05"), fmtGap(l.Gap),
				yesNo(l.Gap < CacheLifetime), re, strings.Join(l.Updates, ", "), l.UpdateTokens, nonRead(l), next)
		}
	}
	b.WriteString("\n")

	// Re-anchors a day change inside a burst caused, in every configuration:
	// on its request or the next, for any reason but a cache miss.
	var parts []string
	for _, p := range AllProviders() {
		for _, s := range configs(r, p) {
			inBurst, caused := 0, 0
			for _, i := range dayChanges(s) {
				if s.Log[i].Gap >= CacheLifetime {
					continue
				}
				inBurst++
				for _, l := range s.Log[i:min(i+2, len(s.Log))] {
					if l.Reanchored && l.Reason != "cache-miss" {
						caused++
					}
				}
			}
			parts = append(parts, fmt.Sprintf("%s/%s %d of %d", configName(s), p, caused, inBurst))
		}
	}
	fmt.Fprintf(b, "Re-anchors caused by a day change inside a burst (on that request or the next, for a reason other than a cache miss), per configuration and provider: %s.\n\n",
		strings.Join(parts, ", "))
	writeResumptions(b, r)
}

// resumption is a request that follows a pause longer than the cache
// lifetime: the cache has expired, so it writes the whole prompt whatever
// the runtime does. What the runtime controls is whether the request
// after it writes the prompt a second time.
type resumption struct {
	newDay bool
	// where says where the epoch re-anchored: "on it" (the host said the
	// cache was cold: cache-expired), "next" (on the miss the provider
	// reported) or "no".
	where  string
	moved  []string // pins the re-anchor moved
	at     RequestLog
	second RequestLog // the request after it
}

// resumptions lists the series' requests that follow a pause, with the
// request after each.
func resumptions(s *Series) []resumption {
	var out []resumption
	for i := 1; i+1 < len(s.Log); i++ {
		l, n := s.Log[i], s.Log[i+1]
		if l.Gap < CacheLifetime {
			continue
		}
		x := resumption{newDay: l.Day != s.Log[i-1].Day, where: "no", at: l, second: n}
		switch {
		case l.Reanchored:
			x.where, x.moved = "on it", l.AnchorChanged
		case n.Reanchored:
			x.where, x.moved = "next", n.AnchorChanged
		}
		out = append(out, x)
	}
	return out
}

func movedText(moved []string) string {
	if len(moved) == 0 {
		return "none"
	}
	return strings.Join(moved, ", ")
}

func writeResumptions(b *strings.Builder, r *Result) {
	type key struct {
		newDay bool
		where  string
	}
	type agg struct{ n, nonRead, input, secondNonRead, secondInput int }
	b.WriteString("### Resumptions after a pause\n\n")
	fmt.Fprintf(b, "The first request after a pause longer than the cache lifetime (%s) finds the cache expired and writes the whole prompt, whatever "+
		"the runtime does. The host (here the harness, as agent.Agent does by default) tells the runtime so (Session.ExpectColdCache) and the "+
		"epoch re-anchors on that request (cache-expired): whatever drifted during the pause is folded into the pins in the write that "+
		"request pays anyway, and the request after it reads the cache. Without that signal the runtime learns of the miss only from "+
		"the provider's report and re-anchors on the next request, writing the prompt a second time whenever a pin moved or an update "+
		"was published before the pause. The shipped configuration's resumptions:\n\n", fmtMinutes(CacheLifetime))
	b.WriteString("| provider | new day | re-anchored | resumptions | resumption requests' non-read / input | next requests' non-read / input |\n")
	b.WriteString("|---|---|---|---:|---:|---:|\n")
	for p, s := range shipped(r) {
		groups := map[key]*agg{}
		var order []key
		for _, x := range resumptions(s) {
			k := key{newDay: x.newDay, where: x.where}
			if groups[k] == nil {
				groups[k] = &agg{}
				order = append(order, k)
			}
			g := groups[k]
			g.n++
			g.nonRead += x.at.NonRead()
			g.input += x.at.Usage.InputTokens()
			g.secondNonRead += x.second.NonRead()
			g.secondInput += x.second.Usage.InputTokens()
		}
		slices.SortFunc(order, func(a, c key) int {
			if a.newDay != c.newDay {
				if a.newDay {
					return 1
				}
				return -1
			}
			return strings.Compare(a.where, c.where)
		})
		for _, k := range order {
			g := groups[k]
			fmt.Fprintf(b, "| %s | %s | %s | %d | %s / %s | %s / %s |\n", p, yesNo(k.newDay), k.where, g.n,
				thousands(float64(g.nonRead)), thousands(float64(g.input)), thousands(float64(g.secondNonRead)), thousands(float64(g.secondInput)))
		}
	}
	b.WriteString("\n")
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// fmtGap formats the time between two requests: seconds, minutes or hours.
func fmtGap(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.0f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%.1f min", d.Minutes())
	default:
		return fmt.Sprintf("%.1f h", d.Hours())
	}
}

func fmtMinutes(d time.Duration) string { return fmt.Sprintf("%.0f minutes", d.Minutes()) }
