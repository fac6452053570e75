package cachebench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// strategyStyle is each strategy's colour and dash pattern in the plot.
// Every colour is distinct (the plot test finds each series by it), and
// the strategies that can coincide with another on some provider (the
// lifetime strategies with anchored on OpenAI, single band with
// breakpoints with single band) are dashed, so the line under them shows
// through the gaps.
var strategyStyle = map[Strategy]struct{ color, dash string }{
	Anchored:              {"#1f6fd1", ""},
	AnchoredHistoryCap:    {"#17becf", "9 3"},
	AnchoredSliding:       {"#8c564b", ""},
	AnchoredTrailing:      {"#e377c2", "4 4"},
	AnchoredWindow20:      {"#bcbd22", ""},
	AnchoredWindow28:      {"#6b8e23", "7 3"},
	AnchoredWindow40:      {"#ff00ff", "3 3"},
	AnchoredWindowSliding: {"#000080", ""},
	AnchoredWindowCost:    {"#ffb000", ""},
	AnchoredTTLLong:       {"#ff1493", "6 6"},
	AnchoredTTLCost:       {"#4b0082", "4 6"},
	SingleBand:            {"#d62728", ""},
	SingleBandBreakpoints: {"#ff7f0e", "6 3"},
	AllInSystem:           {"#9467bd", "2 3"},
	Optimum:               {"#2ca02c", "8 4"},
	WindowOptimum:         {"#006400", "5 2"},
}

// plotLayout is the geometry of the plot: a legend wrapped in rows across
// the top, then one panel per workload (rows) and provider (columns).
type plotLayout struct {
	width, height, legendH int
	legend                 []legendEntry
	cols                   int
}

type legendEntry struct {
	strategy Strategy
	x, y     int
}

const (
	panelW, panelH = 560, 300
	padL, padR     = 80, 20
	padT, padB     = 40, 45
	legendRow      = 22
)

func layout(results []*Result) plotLayout {
	cols := len(AllProviders())
	l := plotLayout{cols: cols, width: cols * (panelW + padL + padR)}
	x, y := 20, 24
	for _, s := range AllStrategies() {
		if !anySeries(results, s) {
			continue
		}
		w := 42 + 8*len(s) + 22
		if x+w > l.width-10 && x > 20 {
			x, y = 20, y+legendRow
		}
		l.legend = append(l.legend, legendEntry{strategy: s, x: x, y: y})
		x += w
	}
	l.legendH = y + 16
	l.height = l.legendH + len(results)*(panelH+padT+padB)
	return l
}

// panel returns the plot area of workload row ri and provider column ci.
func (l plotLayout) panel(ri, ci int) (ox, oy int) {
	return ci*(panelW+padL+padR) + padL, l.legendH + ri*(panelH+padT+padB) + padT
}

// WriteSVG plots the cumulative billed input (base-token equivalents) of
// every strategy against the request index: one panel per workload (rows)
// and provider (columns). The y axis is logarithmic: the strategies' bills
// span two orders of magnitude, and on a log axis a constant gap between
// two lines is a constant ratio of their bills. It draws the SVG by hand:
// a few lines and labels need no plotting library.
func WriteSVG(out io.Writer, results []*Result) error {
	l := layout(results)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="13">`+"\n", l.width, l.height, l.width, l.height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", l.width, l.height)
	for _, e := range l.legend {
		st := strategyStyle[e.strategy]
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"%s/>`, e.x, e.y, e.x+36, e.y, st.color, dashAttr(st.dash))
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", e.x+42, e.y+5, html.EscapeString(string(e.strategy)))
	}
	for ri, r := range results {
		for ci, p := range AllProviders() {
			writePanel(&b, l, ri, ci, r, p)
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(out, b.String())
	return err
}

func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return fmt.Sprintf(` stroke-dasharray="%s"`, dash)
}

func writePanel(b *strings.Builder, l plotLayout, ri, ci int, r *Result, p Provider) {
	ox, oy := l.panel(ri, ci)
	var series []*Series
	lo, hi := math.Inf(1), 0.0
	for _, s := range r.Series {
		if s.Provider != p || len(s.Cumulative) == 0 {
			continue
		}
		series = append(series, s)
		for _, v := range s.Cumulative {
			if v > 0 {
				lo = math.Min(lo, v)
				break
			}
		}
		hi = math.Max(hi, s.Cumulative[len(s.Cumulative)-1])
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="15" font-weight="bold">%s — %s</text>`+"\n", ox, oy-14, html.EscapeString(r.Workload.Name), html.EscapeString(providerTitle(p)))
	if len(series) == 0 || hi <= 0 {
		return
	}
	yLo := math.Pow(10, math.Floor(math.Log10(lo)))
	yHi := math.Pow(10, math.Ceil(math.Log10(hi)))
	if yHi <= yLo {
		yHi = yLo * 10
	}
	n := r.Requests
	xStep := niceStep(float64(n) / 6)
	px := func(i float64) float64 { return float64(ox) + i/float64(max(n-1, 1))*panelW }
	py := func(v float64) float64 {
		v = math.Max(v, yLo)
		return float64(oy) + panelH - (math.Log10(v)-math.Log10(yLo))/(math.Log10(yHi)-math.Log10(yLo))*panelH
	}
	for d := yLo; d <= yHi*1.001; d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := d * m
			if v > yHi*1.001 {
				break
			}
			stroke := "#eeeeee"
			if m == 1 {
				stroke = "#d0d0d0"
			}
			fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`, ox, py(v), ox+panelW, py(v), stroke)
			fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", ox-6, py(v)+4, tokensLabel(v))
		}
	}
	for i := 0.0; i < float64(n); i += xStep {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eeeeee"/>`, px(i), oy, px(i), oy+panelH)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%.0f</text>`+"\n", px(i), oy+panelH+16, i)
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>`+"\n", ox, oy, panelW, panelH)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" fill="#444">model call (request index)</text>`+"\n", ox+panelW/2, oy+panelH+34)
	fmt.Fprintf(b, `<text transform="translate(%d,%d) rotate(-90)" text-anchor="middle" fill="#444">cumulative billed, base tokens (log)</text>`+"\n", ox-62, oy+panelH/2)
	// Solid lines first, dashed over them: a dashed line that coincides
	// with a solid one leaves it visible in its gaps.
	for _, dashed := range []bool{false, true} {
		for _, s := range series {
			st := strategyStyle[s.Strategy]
			if (st.dash != "") != dashed {
				continue
			}
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2.5"%s points="`, st.color, dashAttr(st.dash))
			for i, v := range s.Cumulative {
				fmt.Fprintf(b, "%.1f,%.1f ", px(float64(i)), py(v))
			}
			b.WriteString(`"/>` + "\n")
		}
	}
}

func anySeries(results []*Result, s Strategy) bool {
	for _, r := range results {
		for _, x := range r.Series {
			if x.Strategy == s {
				return true
			}
		}
	}
	return false
}

// niceStep rounds v up to 1, 2 or 5 times a power of ten.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// tokensLabel formats a tick: 500, 2k, 10k, 1M, 20M.
func tokensLabel(v float64) string {
	trim := func(x float64) string {
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.1f", x), "0"), ".")
	}
	switch {
	case v >= 1e6:
		return trim(v/1e6) + "M"
	case v >= 1e3:
		return trim(v/1e3) + "k"
	}
	return trim(v)
}
