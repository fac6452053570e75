package cachebench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// strategyStyle is each strategy's colour and dash pattern in the plot.
var strategyStyle = map[Strategy]struct{ color, dash string }{
	Anchored:              {"#1f6fd1", ""},
	AnchoredHistoryCap:    {"#17becf", ""},
	SingleBand:            {"#d62728", ""},
	SingleBandBreakpoints: {"#ff7f0e", "6 3"},
	AllInSystem:           {"#9467bd", "2 3"},
	Optimum:               {"#2ca02c", "8 4"},
}

// WriteSVG plots the cumulative billed input (base-token equivalents) of
// every strategy against the request index: one panel per workload (rows)
// and provider (columns). It draws the SVG by hand: a few lines and labels
// need no plotting library.
func WriteSVG(out io.Writer, results []*Result) error {
	const (
		panelW, panelH = 560, 300
		padL, padR     = 80, 20
		padT, padB     = 40, 45
		legendH        = 50
	)
	providers := AllProviders()
	cols, rows := len(providers), len(results)
	width := cols * (panelW + padL + padR)
	height := legendH + rows*(panelH+padT+padB)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="13">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)

	// Legend: the strategies present anywhere, in report order.
	x := 20
	for _, s := range AllStrategies() {
		if !anySeries(results, s) {
			continue
		}
		st := strategyStyle[s]
		fmt.Fprintf(&b, `<line x1="%d" y1="25" x2="%d" y2="25" stroke="%s" stroke-width="3" stroke-dasharray="%s"/>`, x, x+30, st.color, st.dash)
		fmt.Fprintf(&b, `<text x="%d" y="30">%s</text>`+"\n", x+36, html.EscapeString(string(s)))
		x += 60 + 8*len(s)
	}

	for ri, r := range results {
		for ci, p := range providers {
			ox := ci*(panelW+padL+padR) + padL
			oy := legendH + ri*(panelH+padT+padB) + padT
			var series []*Series
			maxY := 0.0
			for _, s := range r.Series {
				if s.Provider == p && len(s.Cumulative) > 0 {
					series = append(series, s)
					maxY = math.Max(maxY, s.Cumulative[len(s.Cumulative)-1])
				}
			}
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="15" font-weight="bold">%s — %s</text>`+"\n", ox, oy-14, html.EscapeString(r.Workload.Name), html.EscapeString(providerTitle(p)))
			if len(series) == 0 || maxY <= 0 {
				continue
			}
			n := r.Requests
			yStep := niceStep(maxY / 5)
			yTop := math.Ceil(maxY/yStep) * yStep
			xStep := niceStep(float64(n) / 6)
			px := func(i float64) float64 { return float64(ox) + i/float64(max(n-1, 1))*panelW }
			py := func(v float64) float64 { return float64(oy) + panelH - v/yTop*panelH }
			// Grid and ticks.
			for v := 0.0; v <= yTop+yStep/2; v += yStep {
				fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e4e4e4"/>`, ox, py(v), ox+panelW, py(v))
				fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", ox-6, py(v)+4, millions(v))
			}
			for i := 0.0; i < float64(n); i += xStep {
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e4e4e4"/>`, px(i), oy, px(i), oy+panelH)
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%.0f</text>`+"\n", px(i), oy+panelH+16, i)
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>`+"\n", ox, oy, panelW, panelH)
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#444">model call (request index)</text>`+"\n", ox+panelW/2, oy+panelH+34)
			fmt.Fprintf(&b, `<text transform="translate(%d,%d) rotate(-90)" text-anchor="middle" fill="#444">cumulative billed, M base tokens</text>`+"\n", ox-58, oy+panelH/2)
			for _, s := range series {
				st := strategyStyle[s.Strategy]
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s" points="`, st.color, st.dash)
				for i, v := range s.Cumulative {
					fmt.Fprintf(&b, "%.1f,%.1f ", px(float64(i)), py(v))
				}
				b.WriteString(`"/>` + "\n")
			}
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(out, b.String())
	return err
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

func millions(v float64) string {
	m := v / 1e6
	if m == math.Trunc(m) {
		return fmt.Sprintf("%.0fM", m)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", m), "0"), ".") + "M"
}
