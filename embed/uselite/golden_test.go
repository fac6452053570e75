package uselite

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"sync"
	"testing"
)

type goldenCase struct {
	Text         string    `json:"text"`
	Tokens       []int32   `json:"tokens"`
	Embedding    []float64 `json:"embedding"`
	EmbeddingCPU []float64 `json:"embedding_cpu"`
}

type golden struct {
	Model string       `json:"model"`
	Cases []goldenCase `json:"cases"`
}

// goldenTol is the largest allowed |Go - TF.js| per vector component. The two
// TF.js backends (WebAssembly and pure JS) differ by up to 8e-7 from each other.
const goldenTol = 1e-5

func loadGolden(t testing.TB) *golden {
	t.Helper()
	b, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) < 20 {
		t.Fatalf("golden has %d cases", len(g.Cases))
	}
	return &g
}

var (
	sharedOnce  sync.Once
	sharedModel *Model
	sharedErr   error
)

// testModel loads the installed model once per test binary. Without the model
// it skips, unless STRATA_REQUIRE_MODEL is set (make test sets it), in which
// case a missing model fails the test.
func testModel(t testing.TB) *Model {
	t.Helper()
	sharedOnce.Do(func() { sharedModel, sharedErr = Default() })
	if sharedErr != nil {
		if errors.Is(sharedErr, ErrModelNotFound) && os.Getenv("STRATA_REQUIRE_MODEL") == "" {
			t.Skipf("USE-lite model not installed (%v); run `make model`, or set STRATA_REQUIRE_MODEL=1 to make this a failure", sharedErr)
		}
		t.Fatalf("loading model: %v", sharedErr)
	}
	return sharedModel
}

func TestGoldenTokens(t *testing.T) {
	m := testModel(t)
	g := loadGolden(t)
	long := false
	for _, c := range g.Cases {
		got := m.Tokenizer().Encode(c.Text)
		if !slices.Equal(got, c.Tokens) {
			t.Errorf("Encode(%q)\n got %v\nwant %v", c.Text, got, c.Tokens)
		}
		long = long || len(c.Tokens) > m.MaxTokens()
	}
	if !long {
		t.Error("golden data has no text longer than MaxTokens")
	}
}

func maxAbsDiff(got []float32, want []float64) float64 {
	var d float64
	for i := range want {
		d = max(d, math.Abs(float64(got[i])-want[i]))
	}
	return d
}

func TestGoldenEmbeddings(t *testing.T) {
	m := testModel(t)
	g := loadGolden(t)
	if g.Model != m.Model() {
		t.Fatalf("golden is for %s, model is %s", g.Model, m.Model())
	}
	texts := make([]string, len(g.Cases))
	for i, c := range g.Cases {
		texts[i] = c.Text
	}
	ctx := context.Background()
	batch, err := m.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	var worst float64
	for i, c := range g.Cases {
		single, err := m.Embed(ctx, []string{c.Text})
		if err != nil {
			t.Fatal(err)
		}
		if len(batch[i]) != m.Dimension() || len(c.Embedding) != m.Dimension() {
			t.Fatalf("case %d: dimension %d, golden %d, model %d", i, len(batch[i]), len(c.Embedding), m.Dimension())
		}
		for name, ref := range map[string][]float64{"wasm": c.Embedding, "cpu": c.EmbeddingCPU} {
			for mode, got := range map[string][]float32{"batch": batch[i], "single": single[0]} {
				d := maxAbsDiff(got, ref)
				worst = max(worst, d)
				if d > goldenTol {
					t.Errorf("case %d %q: %s vs TF.js %s: max |diff| %.3g > %g", i, c.Text, mode, name, d, goldenTol)
				}
			}
		}
	}
	t.Logf("max |Go - TF.js| over %d cases, both backends, batch and single: %.3g", len(g.Cases), worst)
}
