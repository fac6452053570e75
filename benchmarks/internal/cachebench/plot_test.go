package cachebench

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stratamem/strata/tokens"
	"github.com/stratamem/strata/tokens/tiktoken"
)

// rsvg finds rsvg-convert (Debian librsvg2-bin). Without it the test is
// skipped, unless STRATA_REQUIRE_RSVG=1 makes that a failure (the test
// script installs it).
func rsvg(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("rsvg-convert")
	if err != nil {
		if os.Getenv("STRATA_REQUIRE_RSVG") == "1" {
			t.Fatal("rsvg-convert not on PATH (apt-get install librsvg2-bin) and STRATA_REQUIRE_RSVG=1")
		}
		t.Skip("rsvg-convert not on PATH (apt-get install librsvg2-bin)")
	}
	return path
}

func hexColor(t *testing.T, s string) [3]int {
	t.Helper()
	var c [3]int
	for i := range c {
		v, err := strconv.ParseUint(s[1+2*i:3+2*i], 16, 8)
		if err != nil {
			t.Fatalf("colour %q: %v", s, err)
		}
		c[i] = int(v)
	}
	return c
}

// countColor counts the pixels of r in img within tol of c on every channel.
func countColor(img image.Image, r image.Rectangle, c [3]int, tol int) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			px := [3]int{int(cr >> 8), int(cg >> 8), int(cb >> 8)}
			ok := true
			for i := range px {
				if d := px[i] - c[i]; d > tol || d < -tol {
					ok = false
					break
				}
			}
			if ok {
				n++
			}
		}
	}
	return n
}

// TestSVGRendersEverySeries renders the plot the command writes with
// rsvg-convert and checks, in the pixels, that every series of every panel
// is drawn inside that panel, and every legend entry inside the canvas
// with its colour: the plot once had two strategies with stroke="" (no
// line, no swatch) and a legend entry past the canvas edge.
func TestSVGRendersEverySeries(t *testing.T) {
	bin := rsvg(t)
	if raceOn {
		t.Skip("runs two workloads; the race detector adds nothing to a renderer check")
	}
	base, err := tiktoken.New("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	tok := tokens.NewCache(base, 1<<16)
	ctx := context.Background()
	var results []*Result
	for _, name := range []string{"churn-heavy", SmallContextWorkload} {
		w, err := WorkloadByName(name)
		if err != nil {
			t.Fatal(err)
		}
		// Enough turns for churn-heavy's budget to overflow and the small
		// window to cut.
		r, err := Run(ctx, w, Options{Turns: 40, Tokenizer: tok})
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
	}
	var svg bytes.Buffer
	if err := WriteSVG(&svg, results); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(svg.Bytes(), []byte(`stroke=""`)) {
		t.Fatal(`the SVG has an element with stroke="" (drawn invisible)`)
	}
	l := layout(results)
	for _, e := range l.legend {
		if right := e.x + 42 + 8*len(e.strategy); right > l.width || e.y > l.legendH {
			t.Errorf("legend entry %s at (%d,%d) ends at x=%d, past the %d-wide canvas or its legend band", e.strategy, e.x, e.y, right, l.width)
		}
	}
	for _, m := range regexp.MustCompile(`<text x="(-?[0-9.]+)"`).FindAllSubmatch(svg.Bytes(), -1) {
		if x, _ := strconv.ParseFloat(string(m[1]), 64); x < 0 || x > float64(l.width) {
			t.Errorf("text at x=%v outside the canvas", x)
		}
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "plot.svg"), filepath.Join(dir, "plot.png")
	if err := os.WriteFile(in, svg.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(bin, "-o", out, in).CombinedOutput(); err != nil {
		t.Fatalf("rsvg-convert: %v: %s", err, msg)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Bounds().Size(); got.X != l.width || got.Y != l.height {
		t.Fatalf("PNG is %v, SVG %dx%d", got, l.width, l.height)
	}
	const tol, minPixels = 12, 15
	for _, e := range l.legend {
		c := hexColor(t, strategyStyle[e.strategy].color)
		if n := countColor(img, image.Rect(e.x, e.y-3, e.x+37, e.y+4), c, tol); n < minPixels {
			t.Errorf("legend swatch of %s: %d pixels of its colour", e.strategy, n)
		}
	}
	checked := 0
	for ri, r := range results {
		for ci, p := range AllProviders() {
			ox, oy := l.panel(ri, ci)
			area := image.Rect(ox+1, oy+1, ox+panelW, oy+panelH)
			for _, s := range r.Series {
				if s.Provider != p {
					continue
				}
				c := hexColor(t, strategyStyle[s.Strategy].color)
				n := countColor(img, area, c, tol)
				if n < minPixels {
					t.Errorf("%s/%s: series %s drawn with %d pixels of its colour %s", r.Workload.Name, p, s.Strategy, n, strategyStyle[s.Strategy].color)
				}
				checked++
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d series checked", checked)
	}
	t.Logf("%d series found in the rendered PNG", checked)
}

// Every strategy has a colour of its own: the test above tells series
// apart by colour.
func TestStrategyColorsDistinct(t *testing.T) {
	seen := map[string]Strategy{}
	for _, s := range AllStrategies() {
		st, ok := strategyStyle[s]
		if !ok || st.color == "" {
			t.Errorf("%s has no colour", s)
			continue
		}
		if o, dup := seen[st.color]; dup {
			t.Errorf("%s and %s share %s", s, o, st.color)
		}
		seen[st.color] = s
	}
}
