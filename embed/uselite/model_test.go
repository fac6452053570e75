package uselite

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stratamem/strata/embed"
)

func TestModelIdentity(t *testing.T) {
	m := testModel(t)
	if m.Model() != "use-lite-en@0.2.0" || m.Dimension() != 512 || m.MaxTokens() != 128 {
		t.Errorf("Model=%q Dimension=%d MaxTokens=%d", m.Model(), m.Dimension(), m.MaxTokens())
	}
	var _ embed.Embedder = m
}

func TestSemanticSanity(t *testing.T) {
	m := testModel(t)
	texts := []string{
		"A man is playing a guitar.",                             // 0
		"Someone is strumming a guitar on stage.",                // 1
		"The stock market fell sharply this morning.",            // 2
		"How do I reset my password?",                            // 3
		"I forgot my login credentials and need to change them.", // 4
		"Share prices dropped steeply today.",                    // 5
	}
	v, err := m.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ a, b, unrelated int }{
		{0, 1, 2}, {1, 0, 3}, {3, 4, 0}, {4, 3, 2}, {2, 5, 0}, {5, 2, 4},
	} {
		para, other := embed.Cosine(v[c.a], v[c.b]), embed.Cosine(v[c.a], v[c.unrelated])
		if para <= other+0.1 {
			t.Errorf("cos(%q, paraphrase %q) = %.3f, not clearly above cos(.., unrelated %q) = %.3f",
				texts[c.a], texts[c.b], para, texts[c.unrelated], other)
		}
	}
	for i, x := range v {
		var ss float64
		for _, f := range x {
			ss += float64(f) * float64(f)
		}
		if ss < 0.9999 || ss > 1.0001 {
			t.Errorf("vector %d has squared norm %f", i, ss)
		}
	}
}

func TestLongTextUsesFirstMaxTokens(t *testing.T) {
	m := testModel(t)
	base := strings.Repeat("alpha beta gamma delta ", 40) // well over 128 pieces
	if n := len(m.Tokenizer().Encode(base)); n <= m.MaxTokens() {
		t.Fatalf("test text has only %d pieces", n)
	}
	v, err := m.Embed(context.Background(), []string{base, base + " a different ending entirely"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v[0], v[1]) {
		t.Error("text beyond MaxTokens changed the vector")
	}
}

func TestEmptyInput(t *testing.T) {
	m := testModel(t)
	ctx := context.Background()
	for _, in := range [][]string{nil, {}, {""}, {"ok", "  \n\t"}} {
		_, err := m.Embed(ctx, in)
		if !errors.Is(err, embed.ErrEmptyInput) {
			t.Errorf("Embed(%q) error = %v, want ErrEmptyInput", in, err)
		}
	}
	_, err := m.Embed(ctx, []string{"fine", ""})
	var ie *embed.InputError
	if !errors.As(err, &ie) || ie.Index != 1 {
		t.Errorf("error %v does not name index 1", err)
	}
}

func TestContextCancelled(t *testing.T) {
	m := testModel(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Embed(ctx, []string{"hello"}); !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}

func TestConcurrentEmbed(t *testing.T) {
	m := testModel(t)
	texts := benchBatch(12)
	want, err := m.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Go(func() {
			// Different batch shapes per goroutine share the scratch pool.
			sub := texts[g:]
			got, err := m.Embed(context.Background(), sub)
			if err != nil {
				errs <- err
				return
			}
			for i := range got {
				if !slices.Equal(got[i], want[g+i]) {
					errs <- errors.New("concurrent result differs from sequential one")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestDefaultDirMissing(t *testing.T) {
	empty := t.TempDir()
	t.Setenv(EnvModelDir, empty)
	_, err := Default()
	if !errors.Is(err, ErrModelNotFound) || !strings.HasSuffix(err.Error(), InstallHint) || !strings.Contains(err.Error(), EnvModelDir) {
		t.Errorf("STRATA_MODEL_DIR=empty: %v", err)
	}
	t.Setenv(EnvModelDir, "")
	t.Setenv(EnvDataDir, empty)
	_, err = DefaultDir()
	if !errors.Is(err, ErrModelNotFound) || !strings.Contains(err.Error(), filepath.Join(empty, "models", DirName)) {
		t.Errorf("STRATA_DATA_DIR=empty: %v", err)
	}
	t.Setenv(EnvDataDir, "")
	t.Chdir(empty)
	_, err = DefaultDir()
	if !errors.Is(err, ErrModelNotFound) || !strings.HasSuffix(err.Error(), InstallHint) {
		t.Errorf("no env, no .strata: %v", err)
	}
}

func TestDefaultDirSearchesParents(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, ".strata", "models", DirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvModelDir, "")
	t.Setenv(EnvDataDir, "")
	t.Chdir(sub)
	got, err := DefaultDir()
	if err != nil || got != dir {
		t.Errorf("DefaultDir() = %q, %v; want %q", got, err, dir)
	}
	// The placeholder model.json is found but fails verification.
	if _, err := Load(got); !errors.Is(err, ErrModelNotFound) && !errors.Is(err, ErrCorruptModel) {
		t.Errorf("Load(placeholder) = %v", err)
	}
}

// copyModel links the installed model's files into a temp dir, so a test can
// replace one of them.
func copyModel(t *testing.T, m *Model) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range pinned {
		if err := os.Symlink(filepath.Join(m.Dir(), p.name), filepath.Join(dir, p.name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadCorruptAndMissingFiles(t *testing.T) {
	m := testModel(t)
	dir := copyModel(t, m)
	vocab := filepath.Join(dir, "vocab.json")
	if err := os.Remove(vocab); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); !errors.Is(err, ErrModelNotFound) || !strings.Contains(err.Error(), "vocab.json") {
		t.Errorf("missing vocab.json: %v", err)
	}
	if err := os.WriteFile(vocab, []byte(`[["x",0]]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); !errors.Is(err, ErrCorruptModel) {
		t.Errorf("edited vocab.json: %v", err)
	}
}

// TestGraphCheckRejectsOtherGraphs edits the installed model.json in memory
// and checks that readWeights notices each change the forward pass depends on.
func TestGraphCheckRejectsOtherGraphs(t *testing.T) {
	m := testModel(t)
	files, err := readVerified(m.Dir())
	if err != nil {
		t.Fatal(err)
	}
	nodes, tensors, err := parseGraph(files["model.json"], files)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readWeights(nodes, tensors); err != nil {
		t.Fatalf("pristine graph rejected: %v", err)
	}
	edits := map[string]func(map[string]graphNode, map[string]*tensor){
		"unknown op": func(n map[string]graphNode, _ map[string]*tensor) {
			n["x"] = graphNode{Name: "x", Op: "Gelu"}
		},
		"no doubled embedding": func(n map[string]graphNode, _ map[string]*tensor) {
			k := pTS + "Layer_0/add"
			nd := n[k]
			nd.Input = []string{pTS + "Layer_0/AddTimingSignal/Scatter/ScatterNd", pTS + "Layer_0/AddTimingSignal/Scatter/ScatterNd"}
			n[k] = nd
		},
		"gelu instead of relu": func(n map[string]graphNode, _ map[string]*tensor) {
			k := pTS + "Layer_1/TransformerLayer/FFN/conv1/Relu"
			nd := n[k]
			nd.Op = "Elu"
			n[k] = nd
		},
		"odd qkv split": func(_ map[string]graphNode, w map[string]*tensor) {
			k := pTS + "Layer_1/TransformerLayer/MultiheadAttention/Const"
			w[k] = &tensor{shape: []int{3}, i32: []int32{512, 256, 768}}
		},
		"wrong kernel shape": func(_ map[string]graphNode, w map[string]*tensor) {
			k := pTS + "Layer_0/TransformerLayer/FFN/conv1/Tensordot/Reshape_1"
			w[k] = &tensor{shape: []int{256, 1536}, f32: make([]float32, 256*1536)}
		},
	}
	for name, edit := range edits {
		n2 := make(map[string]graphNode, len(nodes))
		for k, v := range nodes {
			n2[k] = v
		}
		t2 := make(map[string]*tensor, len(tensors))
		for k, v := range tensors {
			t2[k] = v
		}
		edit(n2, t2)
		if _, err := readWeights(n2, t2); !errors.Is(err, ErrUnsupportedModel) {
			t.Errorf("%s: error = %v, want ErrUnsupportedModel", name, err)
		}
	}
}

func TestParseGraphErrors(t *testing.T) {
	good := map[string]any{
		"modelTopology": map[string]any{"node": []any{}},
		"weightsManifest": []any{map[string]any{
			"paths":   []string{"s1"},
			"weights": []any{map[string]any{"name": "w", "shape": []int{2}, "dtype": "float32"}},
		}},
	}
	enc := func(v any) []byte { b, _ := json.Marshal(v); return b }
	if _, ts, err := parseGraph(enc(good), map[string][]byte{"s1": make([]byte, 8)}); err != nil || len(ts["w"].f32) != 2 {
		t.Fatalf("good graph: %v", err)
	}
	for name, files := range map[string]map[string][]byte{
		"short shard":   {"s1": make([]byte, 4)},
		"long shard":    {"s1": make([]byte, 12)},
		"missing shard": {},
	} {
		if _, _, err := parseGraph(enc(good), files); !errors.Is(err, ErrUnsupportedModel) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, err := parseGraph([]byte("{"), nil); !errors.Is(err, ErrUnsupportedModel) {
		t.Errorf("bad json: %v", err)
	}
}
