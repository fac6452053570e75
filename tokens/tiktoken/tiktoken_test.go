package tiktoken

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stratamem/strata/tokens"
)

// Counts and ids derived once by running tiktoken-go; the rows marked
// "published" match the figures in OpenAI's tiktoken cookbook
// ("How to count tokens with tiktoken"), which were computed with the
// Python reference implementation.
var knownCounts = []struct {
	text   string
	o200k  int
	cl100k int
}{
	{"hello world", 2, 2},                  // published
	{"tiktoken is great!", 6, 6},           // published (cl100k)
	{"antidisestablishmentarianism", 6, 6}, // published
	{"2 + 2 = 4", 7, 7},                    // published
	{"お誕生日おめでとう", 8, 9},                    // published
	{"The quick brown fox jumps over the lazy dog.", 10, 10},
	{"Hello, 世界! 👋🏽", 8, 12},
	{"func main() {\n\tfmt.Println(\"hi\")\n}\n", 10, 10},
	// Special-token text is ordinary text: split, never mapped or rejected.
	{"<|endoftext|>", 7, 7},
	{"a<|endoftext|>b<|fim_prefix|><|endofprompt|>", 21, 22},
}

func mustNew(t testing.TB, name string) tokens.Tokenizer {
	t.Helper()
	tk, err := New(name)
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	return tk
}

func TestKnownCounts(t *testing.T) {
	o := mustNew(t, O200kBase)
	c := mustNew(t, Cl100kBase)
	for _, tc := range knownCounts {
		if got := o.Count(tc.text); got != tc.o200k {
			t.Errorf("o200k_base Count(%q) = %d, want %d", tc.text, got, tc.o200k)
		}
		if got := c.Count(tc.text); got != tc.cl100k {
			t.Errorf("cl100k_base Count(%q) = %d, want %d", tc.text, got, tc.cl100k)
		}
	}
}

// The published token ids pin down that the embedded tables are the real
// encodings, not merely tables that happen to give the same lengths.
func TestPublishedTokenIDs(t *testing.T) {
	cases := []struct {
		enc  string
		text string
		ids  []int
	}{
		{O200kBase, "antidisestablishmentarianism", []int{493, 129901, 376, 160388, 21203, 2367}},
		{Cl100kBase, "antidisestablishmentarianism", []int{519, 85342, 34500, 479, 8997, 2191}},
		{Cl100kBase, "tiktoken is great!", []int{83, 1609, 5963, 374, 2294, 0}},
		{Cl100kBase, "hello world", []int{15339, 1917}},
	}
	for _, tc := range cases {
		got := mustNew(t, tc.enc).(*bpe).enc.EncodeOrdinary(tc.text)
		if fmt.Sprint(got) != fmt.Sprint(tc.ids) {
			t.Errorf("%s %q: ids %v, want %v", tc.enc, tc.text, got, tc.ids)
		}
	}
}

func TestEmptyAndOddInput(t *testing.T) {
	for _, name := range []string{O200kBase, Cl100kBase, tokens.EstimateName} {
		tk := mustNew(t, name)
		if tk.Name() != name {
			t.Errorf("Name() = %q, want %q", tk.Name(), name)
		}
		if n := tk.Count(""); n != 0 {
			t.Errorf("%s Count(\"\") = %d, want 0", name, n)
		}
		// Invalid UTF-8, NUL bytes and lone special markers must count, not panic.
		for _, s := range []string{"\xff\xfe bad", "\x00", "<|", "|>", strings.Repeat("<|endoftext|>", 50)} {
			if n := tk.Count(s); n <= 0 {
				t.Errorf("%s Count(%q) = %d, want > 0", name, s, n)
			}
		}
	}
}

func TestUnicodeEncodingsDiffer(t *testing.T) {
	// o200k has a much larger multilingual vocabulary: the same CJK text
	// must cost fewer tokens than in cl100k.
	text := strings.Repeat("人工知能は言語モデルの文脈を管理する。", 10)
	o := mustNew(t, O200kBase).Count(text)
	c := mustNew(t, Cl100kBase).Count(text)
	if !(o > 0 && o < c) {
		t.Fatalf("o200k=%d cl100k=%d: want 0 < o200k < cl100k", o, c)
	}
}

func TestSharedInstance(t *testing.T) {
	a := mustNew(t, O200kBase)
	b := mustNew(t, O200kBase)
	if a != b {
		t.Fatal("New built the encoding twice")
	}
}

func TestUnknownEncoding(t *testing.T) {
	for _, name := range []string{"", "p50k_base", "O200K_BASE", "gpt2"} {
		tk, err := New(name)
		if !errors.Is(err, ErrUnknownEncoding) || tk != nil {
			t.Errorf("New(%q) = %v, %v; want nil, ErrUnknownEncoding", name, tk, err)
		}
	}
}

func TestForModel(t *testing.T) {
	cases := map[string]string{
		"gpt-4o":                     O200kBase,
		"gpt-4o-mini-2024-07-18":     O200kBase,
		"chatgpt-4o-latest":          O200kBase,
		"gpt-4.1-nano":               O200kBase,
		"gpt-4.5-preview":            O200kBase,
		"gpt-5":                      O200kBase,
		"gpt-5.1-codex":              O200kBase,
		"o1":                         O200kBase,
		"o1-mini":                    O200kBase,
		"o3-2025-04-16":              O200kBase,
		"o4-mini":                    O200kBase,
		"openai/gpt-4o":              O200kBase,
		"GPT-4O":                     O200kBase,
		"gpt-4":                      Cl100kBase,
		"gpt-4-turbo":                Cl100kBase,
		"gpt-4-32k-0314":             Cl100kBase,
		"gpt-3.5-turbo":              Cl100kBase,
		"text-embedding-3-small":     Cl100kBase,
		"claude-sonnet-4-5":          O200kBase,
		"anthropic/claude-3-5-haiku": O200kBase,
	}
	for model, want := range cases {
		tk, err := ForModel(model)
		if err != nil {
			t.Errorf("ForModel(%q): %v", model, err)
			continue
		}
		if tk.Name() != want {
			t.Errorf("ForModel(%q) = %s, want %s", model, tk.Name(), want)
		}
	}
	for _, model := range []string{"", "llama-3-70b", "o10", "o1x", "gemini-2.5-pro", "davinci"} {
		if _, err := ForModel(model); !errors.Is(err, ErrUnknownModel) {
			t.Errorf("ForModel(%q) err = %v, want ErrUnknownModel", model, err)
		}
	}
}

// TestConcurrent runs many goroutines over shared encodings and a shared
// cache; under -race it proves the tokenizers need no extra locking.
func TestConcurrent(t *testing.T) {
	toks := []tokens.Tokenizer{mustNew(t, O200kBase), mustNew(t, Cl100kBase), tokens.Estimate()}
	cache := tokens.NewCache(toks[0], 8)
	toks = append(toks, cache)
	want := make([][]int, len(toks))
	for i, tk := range toks {
		for _, tc := range knownCounts {
			want[i] = append(want[i], tk.Count(tc.text))
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 20; round++ {
				for i, tk := range toks {
					j := (g + round) % len(knownCounts)
					if got := tk.Count(knownCounts[j].text); got != want[i][j] {
						errs <- fmt.Errorf("%s Count(%q) = %d, want %d", tk.Name(), knownCounts[j].text, got, want[i][j])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestOffline proves the BPE tables come from the binary: with an empty
// cache directory and no proxy reachable, a fresh process still builds
// both encodings. It runs in a child process because the encodings of this
// one may already be built.
func TestOffline(t *testing.T) {
	if os.Getenv("STRATA_TIKTOKEN_OFFLINE_CHILD") == "1" {
		for _, name := range []string{O200kBase, Cl100kBase} {
			if n := mustNew(t, name).Count("hello world"); n != 2 {
				t.Fatalf("%s: %d tokens, want 2", name, n)
			}
		}
		entries, err := os.ReadDir(os.Getenv("TIKTOKEN_CACHE_DIR"))
		if err != nil || len(entries) != 0 {
			t.Fatalf("cache dir touched: %v entries, err %v", len(entries), err)
		}
		return
	}
	cacheDir := t.TempDir()
	cmd := testCommand(t, "^TestOffline$")
	cmd.Env = append(os.Environ(),
		"STRATA_TIKTOKEN_OFFLINE_CHILD=1",
		"TIKTOKEN_CACHE_DIR="+cacheDir,
		"DATA_GYM_CACHE_DIR="+cacheDir,
		// Any download attempt would go to an unroutable proxy and fail.
		"HTTPS_PROXY=http://127.0.0.1:1", "HTTP_PROXY=http://127.0.0.1:1",
		"https_proxy=http://127.0.0.1:1", "http_proxy=http://127.0.0.1:1", "NO_PROXY=", "no_proxy=",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("offline child failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("offline child did not run the test:\n%s", out)
	}
}
