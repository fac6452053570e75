package recallbench

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
)

// WriteSVG draws the results as three panels over collection size (log
// scale): top-K p50 latency, ingest rate and recall@K. Each backend is one
// colour; clustered datasets are joined by lines, text datasets are hollow
// markers. The SVG is plain, self-contained and deterministic for a given
// report.
func (r *Report) WriteSVG(w io.Writer) error {
	const (
		pw, ph   = 300.0, 220.0 // panel plot area
		ml, mt   = 60.0, 40.0   // margins
		gap      = 80.0
		width    = ml + 3*pw + 2*gap + 30
		height   = mt + ph + 90
		fontAttr = `font-family="sans-serif" font-size="11"`
	)
	colors := map[string]string{Chromem: "#1f77b4", PGVector: "#d62728", Qdrant: "#2ca02c"}
	var ok []Result
	for _, x := range r.Results {
		if x.Err == nil && len(x.Throughput) > 0 {
			ok = append(ok, x)
		}
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`+"\n", width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	if len(ok) == 0 {
		p(`<text x="20" y="40" %s>no results</text></svg>`+"\n", fontAttr)
		_, err := io.WriteString(w, b.String())
		return err
	}
	sizes := map[int]bool{}
	for _, x := range ok {
		sizes[x.Size] = true
	}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for s := range sizes {
		xmin, xmax = math.Min(xmin, float64(s)), math.Max(xmax, float64(s))
	}
	lx := func(v float64) float64 { return math.Log10(v) }
	lxmin, lxmax := lx(xmin)-0.15, lx(xmax)+0.15

	type panel struct {
		title string
		log   bool
		val   func(Result) float64
		unit  string
		// target is the bound drawn as a dashed line (0: none).
		target float64
	}
	panels := []panel{
		{fmt.Sprintf("top-%d p50 latency (ms, 1 client)", r.Config.K), true, func(x Result) float64 { return float64(x.Throughput[0].P50) / 1e6 }, "ms", float64(TargetEmbeddedP50) / 1e6},
		{"ingest rate (records/s)", true, func(x Result) float64 { return x.IngestRate() }, "/s", targetSize / TargetIngest10k.Seconds()},
		{fmt.Sprintf("recall@%d", r.Config.K), false, func(x Result) float64 { return x.Recall }, "", TargetRecall},
	}
	backends := []string{}
	for _, x := range ok {
		if !slices.Contains(backends, x.Backend) {
			backends = append(backends, x.Backend)
		}
	}
	for pi, pn := range panels {
		x0 := ml + float64(pi)*(pw+gap)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range ok {
			v := pn.val(x)
			if pn.log && v <= 0 {
				continue
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		if pn.target > 0 {
			lo, hi = math.Min(lo, pn.target), math.Max(hi, pn.target)
		}
		var ymap func(float64) float64
		var ticks []float64
		if pn.log {
			a, z := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
			if z == a {
				z++
			}
			ymap = func(v float64) float64 { return mt + ph - (math.Log10(v)-a)/(z-a)*ph }
			for e := a; e <= z; e++ {
				ticks = append(ticks, math.Pow(10, e))
			}
		} else {
			a := math.Min(0.9, math.Floor(lo*20)/20)
			ymap = func(v float64) float64 { return mt + ph - (v-a)/(1-a)*ph }
			for t := a; t <= 1.0001; t += 0.05 {
				ticks = append(ticks, t)
			}
		}
		xmap := func(s int) float64 { return x0 + (lx(float64(s))-lxmin)/(lxmax-lxmin)*pw }
		p(`<text x="%.1f" y="%.1f" %s font-weight="bold">%s</text>`+"\n", x0, mt-14, fontAttr, pn.title)
		p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#888"/>`+"\n", x0, mt, pw, ph)
		for _, t := range ticks {
			y := ymap(t)
			p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x0, y, x0+pw, y)
			p(`<text x="%.1f" y="%.1f" %s text-anchor="end">%s</text>`+"\n", x0-4, y+4, fontAttr, tickLabel(t, pn.log))
		}
		for _, s := range slices.Sorted(maps.Keys(sizes)) {
			x := xmap(s)
			p(`<text x="%.1f" y="%.1f" %s text-anchor="middle">%s</text>`+"\n", x, mt+ph+14, fontAttr, SizeLabel(s))
		}
		p(`<text x="%.1f" y="%.1f" %s text-anchor="middle">records</text>`+"\n", x0+pw/2, mt+ph+30, fontAttr)
		if pn.target > 0 {
			y := ymap(pn.target)
			p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e08000" stroke-dasharray="5,4"/>`+"\n", x0, y, x0+pw, y)
			p(`<text x="%.1f" y="%.1f" %s fill="#e08000" text-anchor="end">target</text>`+"\n", x0+pw-3, y-4, fontAttr)
		}
		for _, be := range backends {
			col := colors[be]
			if col == "" {
				col = "#555"
			}
			var pts []string
			for _, x := range ok {
				if x.Backend != be {
					continue
				}
				v := pn.val(x)
				if pn.log && v <= 0 {
					continue
				}
				cx, cy := xmap(x.Size), ymap(v)
				if strings.HasPrefix(x.Dataset, Clustered) {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", cx, cy))
					p(`<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", cx, cy, col)
				} else {
					p(`<circle cx="%.1f" cy="%.1f" r="5" fill="none" stroke="%s" stroke-width="2"/>`+"\n", cx, cy, col)
				}
			}
			if len(pts) > 1 {
				p(`<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.Join(pts, " "), col)
			}
		}
	}
	// Legend.
	ly := mt + ph + 55
	lx0 := ml
	for _, be := range backends {
		col := colors[be]
		if col == "" {
			col = "#555"
		}
		p(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/><text x="%.1f" y="%.1f" %s>%s</text>`+"\n", lx0, ly, col, lx0+8, ly+4, fontAttr, be)
		lx0 += 90
	}
	p(`<text x="%.1f" y="%.1f" %s>filled, joined: clustered vectors; hollow: real text (%s)</text>`+"\n", lx0+10, ly+4, fontAttr, "default model")
	p("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func tickLabel(v float64, log bool) string {
	if !log {
		return fmt.Sprintf("%.2f", v)
	}
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	default:
		return fmt.Sprintf("%g", v)
	}
}
