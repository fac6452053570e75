package scalebench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// series is one line of a panel: a backend on a layout.
type series struct {
	backend string
	layout  Layout
}

func (s series) color() string {
	if s.backend == PGVector {
		return "#d62728"
	}
	return "#1f77b4"
}

func (s series) dash() string {
	if s.layout == Spread {
		return ` stroke-dasharray="6,4"`
	}
	return ""
}

func (s series) label() string {
	if s.layout == Spread {
		return fmt.Sprintf("%s, spread over %s resources", s.backend, commas(SpreadResources))
	}
	return s.backend + ", one resource"
}

type panel struct {
	title string
	unit  string
	// val returns the point and whether it is a failure marker (a start
	// that timed out, drawn at its cost with the timeout raised).
	val    func(Result) (v float64, failed bool, ok bool)
	target float64
}

// WriteSVG draws six panels over the history size (log scale): session
// start, append+record p50, assemble p50, search p50 and p95, and RSS.
// Lines are coloured by backend, solid for one resource and dashed for the
// spread layout; a cross marks a size where starts failed their init
// timeout: at the p50 of the others, or, when all failed, at what one
// start cost with the timeout raised. Dashed orange lines are the targets.
func (r *Report) WriteSVG(w io.Writer) error {
	const (
		pw, ph = 280.0, 190.0
		ml, mt = 62.0, 46.0
		gx, gy = 88.0, 86.0
		cols   = 3
		font   = `font-family="sans-serif" font-size="11"`
	)
	panels := []panel{
		{"session start p50 (ms)", "ms", func(c Result) (float64, bool, bool) {
			if c.Start.Fail == c.Start.N && c.StartUnboundedMs > 0 {
				return c.StartUnboundedMs, true, true
			}
			return c.Start.P50, c.Start.Fail > 0, c.Start.N > c.Start.Fail
		}, TargetStartP50Ms},
		{"append+record p50 (ms)", "ms", func(c Result) (float64, bool, bool) { return c.AppendRecord.P50, false, c.AppendRecord.N > 0 }, 0},
		{"assemble p50 (ms)", "ms", func(c Result) (float64, bool, bool) { return c.Assemble.P50, false, c.Assemble.N > c.Assemble.Fail }, 0},
		{"search p50 (ms)", "ms", func(c Result) (float64, bool, bool) { return c.Search.P50, false, c.Search.N > c.Search.Fail }, TargetSearchP50Ms},
		{"search p95 (ms)", "ms", func(c Result) (float64, bool, bool) { return c.Search.P95, false, c.Search.N > c.Search.Fail }, TargetSearchP95Ms},
		{"RSS, one session open (MiB)", "MiB", func(c Result) (float64, bool, bool) { return c.MemSession.RSSMiB, false, c.MemSession.RSSMiB > 0 }, 0},
	}
	var ok []Result
	for _, c := range r.Cases {
		if c.Err == "" && c.Skipped == "" {
			ok = append(ok, c)
		}
	}
	var ss []series
	for _, l := range r.Layouts {
		for _, be := range r.Backends {
			for _, c := range ok {
				if c.Backend == be && c.Layout == l {
					ss = append(ss, series{be, l})
					break
				}
			}
		}
	}
	rows := (len(panels) + cols - 1) / cols
	legendH := 22.0*float64((len(ss)+1)/2) + 62
	width := ml + cols*pw + (cols-1)*gx + 30
	height := mt + float64(rows)*ph + float64(rows-1)*gy + 40 + legendH
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`+"\n", width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%.0f" y="20" font-family="sans-serif" font-size="14" font-weight="bold">Semantic memory cost with history size (%s)</text>`+"\n", ml, r.Date.UTC().Format("2006-01-02"))
	if len(ok) == 0 {
		p(`<text x="20" y="60" %s>no results</text></svg>`+"\n", font)
		_, err := io.WriteString(w, b.String())
		return err
	}
	var sizes []int
	for _, c := range ok {
		if !slices.Contains(sizes, c.Size) {
			sizes = append(sizes, c.Size)
		}
	}
	slices.Sort(sizes)
	lxmin, lxmax := math.Log10(float64(sizes[0]))-0.2, math.Log10(float64(sizes[len(sizes)-1]))+0.2
	for pi, pn := range panels {
		x0 := ml + float64(pi%cols)*(pw+gx)
		y0 := mt + float64(pi/cols)*(ph+gy)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, c := range ok {
			if v, _, has := pn.val(c); has && v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		if pn.target > 0 {
			lo, hi = math.Min(lo, pn.target), math.Max(hi, pn.target)
		}
		if math.IsInf(lo, 1) {
			lo, hi = 1, 10
		}
		a, z := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if z <= a {
			z = a + 1
		}
		ymap := func(v float64) float64 { return y0 + ph - (math.Log10(v)-a)/(z-a)*ph }
		xmap := func(s int) float64 { return x0 + (math.Log10(float64(s))-lxmin)/(lxmax-lxmin)*pw }
		p(`<text x="%.1f" y="%.1f" %s font-weight="bold">%s</text>`+"\n", x0, y0-10, font, pn.title)
		p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#888"/>`+"\n", x0, y0, pw, ph)
		for e := a; e <= z; e++ {
			y := ymap(math.Pow(10, e))
			p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x0, y, x0+pw, y)
			p(`<text x="%.1f" y="%.1f" %s text-anchor="end">%s</text>`+"\n", x0-4, y+4, font, tick(math.Pow(10, e)))
		}
		for _, s := range sizes {
			x := xmap(s)
			p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x, y0, x, y0+ph)
			p(`<text x="%.1f" y="%.1f" %s text-anchor="middle">%s</text>`+"\n", x, y0+ph+14, font, SizeLabel(s))
		}
		p(`<text x="%.1f" y="%.1f" %s text-anchor="middle">messages (log)</text>`+"\n", x0+pw/2, y0+ph+30, font)
		if pn.target > 0 {
			y := ymap(pn.target)
			p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e08000" stroke-width="1.5" stroke-dasharray="5,4"/>`+"\n", x0, y, x0+pw, y)
			p(`<text x="%.1f" y="%.1f" %s fill="#e08000">target %s %s</text>`+"\n", x0+4, y-4, font, tick(pn.target), pn.unit)
		}
		for _, s := range ss {
			var pts []string
			for _, size := range sizes {
				var c Result
				found := false
				for _, x := range ok {
					if x.Backend == s.backend && x.Layout == s.layout && x.Size == size {
						c, found = x, true
					}
				}
				if !found {
					continue
				}
				v, failed, has := pn.val(c)
				if !has || v <= 0 {
					continue
				}
				cx, cy := xmap(size), ymap(v)
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", cx, cy))
				if failed {
					p(`<path d="M%.1f,%.1f l8,8 m0,-8 l-8,8" stroke="%s" stroke-width="2.5"/>`+"\n", cx-4, cy-4, s.color())
				} else if s.layout == Spread {
					p(`<rect x="%.1f" y="%.1f" width="7" height="7" fill="white" stroke="%s" stroke-width="1.5"/>`+"\n", cx-3.5, cy-3.5, s.color())
				} else {
					p(`<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", cx, cy, s.color())
				}
			}
			if len(pts) > 1 {
				p(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.color(), s.dash())
			}
		}
	}
	// Legend, inside the canvas below the panels.
	ly := mt + float64(rows)*ph + float64(rows-1)*gy + 48
	for i, s := range ss {
		lx := ml + float64(i%2)*420
		y := ly + float64(i/2)*22
		p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx, y, lx+34, y, s.color(), s.dash())
		if s.layout == Spread {
			p(`<rect x="%.1f" y="%.1f" width="7" height="7" fill="white" stroke="%s" stroke-width="1.5"/>`+"\n", lx+13.5, y-3.5, s.color())
		} else {
			p(`<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", lx+17, y, s.color())
		}
		p(`<text x="%.1f" y="%.1f" %s>%s</text>`+"\n", lx+42, y+4, font, s.label())
	}
	y := ly + 22*float64((len(ss)+1)/2)
	p(`<path d="M%.1f,%.1f l8,8 m0,-8 l-8,8" stroke="#555" stroke-width="2.5"/>`+"\n", ml+13, y-4)
	p(`<text x="%.1f" y="%.1f" %s>starts failed their 10 s init timeout (some: p50 of the others; all: one start with the timeout raised)</text>`+"\n", ml+42, y+4, font)
	y += 22
	p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e08000" stroke-width="1.5" stroke-dasharray="5,4"/>`+"\n", ml, y, ml+34, y)
	p(`<text x="%.1f" y="%.1f" %s>target (at %s messages in one resource)</text>`+"\n", ml+42, y+4, font, SizeLabel(TargetSize))
	p("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func tick(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}
