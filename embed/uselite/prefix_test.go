package uselite

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

type refArc struct {
	start int
	score float64
	id    int32
}

// referenceEncode is the tokenizer as first written: a direct port of the
// reference, building every piece of the whole text before the Viterbi
// pass (it matched the TF.js tokens of the golden sentences). The streaming
// Encode and EncodePrefix are checked against it.
func referenceEncode(t *Tokenizer, text string) []int32 {
	syms := []rune(Normalize(text))
	n := len(syms)
	if n == 0 {
		return nil
	}
	// ends[e] lists the pieces ending at symbol e, in increasing start order,
	// which is the order the reference visits them in.
	ends := make([][]refArc, n+1)
	for i := 0; i < n; i++ {
		found := false
		node, ok := t.nodes[0].children[syms[i]]
		for j := i; ok; j++ {
			nd := &t.nodes[node]
			if nd.end {
				ends[j+1] = append(ends[j+1], refArc{start: i, score: nd.score, id: nd.id})
				found = true
			}
			if j+1 >= n {
				break
			}
			node, ok = nd.children[syms[j+1]]
		}
		if !found {
			ends[i+1] = append(ends[i+1], refArc{start: i, score: 0, id: unkID})
		}
	}
	best := make([]float64, n+1)
	words := make([]int32, n+1)
	for e := 0; e <= n; e++ {
		for _, a := range ends[e] {
			score := a.score + best[a.start]
			// The reference treats a best of exactly 0 as "unset".
			if best[e] == 0 || score >= best[e] {
				best[e] = score
				words[e] = a.id
			}
		}
	}
	var rev []int32
	for it := n; it > 0; {
		id := words[it]
		rev = append(rev, id)
		it -= t.len16[id]
	}
	out := make([]int32, 0, len(rev))
	prevUnk := false
	for _, id := range rev {
		if !(prevUnk && id == unkID) {
			out = append(out, id)
		}
		prevUnk = id == unkID
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// checkPrefixes compares Encode and EncodePrefix with referenceEncode.
func checkPrefixes(t *testing.T, tok *Tokenizer, s string, ns ...int) {
	t.Helper()
	want := referenceEncode(tok, s)
	if got := tok.Encode(s); !slices.Equal(got, want) {
		t.Fatalf("Encode(%.80q)\n got %v\nwant %v", s, got, want)
	}
	for _, n := range ns {
		w := want[:min(n, len(want))]
		if n <= 0 {
			w = nil
		}
		if got := tok.EncodePrefix(s, n); !slices.Equal(got, w) {
			t.Fatalf("EncodePrefix(%.80q, %d) (text of %d bytes, %d ids)\n got %v\nwant %v", s, n, len(s), len(want), got, w)
		}
	}
}

// Symbols that exercise the test vocabulary's pieces, ties, null scores,
// NFKC (full-width letters, the "fi" ligature, combining marks), unknown
// characters and their merging, characters outside the BMP, spaces and
// other whitespace, and invalid UTF-8.
var testAlphabet = []string{"a", "b", "c", "d", "f", "i", ":", " ", " ", "ab", "bc", "dd", "ﬁ", "ａ", "ｂ", "€", "🍕", "\t", "\xff", "e\u0301", "\u0301"}

func randomText(r *rand.Rand, alphabet []string, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

// TestEncodePrefixMatchesReference checks on the small vocabulary, over
// many random texts, that Encode equals the reference and that
// EncodePrefix(s, n) is the first n ids of it for every n.
func TestEncodePrefixMatchesReference(t *testing.T) {
	tok := newTestTokenizer(t)
	r := rand.New(rand.NewPCG(7, 8))
	for range 3000 {
		s := randomText(r, testAlphabet, r.IntN(120))
		ns := []int{0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 1000}
		checkPrefixes(t, tok, s, ns...)
	}
	// Texts where the forward pass finds no meeting point for long
	// stretches: runs of one letter whose segmentation depends on what
	// follows them.
	for _, s := range []string{
		strings.Repeat("d", 500), strings.Repeat("d", 501), strings.Repeat("d", 500) + "c",
		strings.Repeat("bc", 300), strings.Repeat("ab", 300) + "c", "a" + strings.Repeat("d", 777) + " dd",
	} {
		checkPrefixes(t, tok, s, 1, 2, 7, 100, 10000)
	}
}

// realTexts are long texts of several kinds for the real vocabulary.
func realTexts(t *testing.T) []string {
	g := loadGolden(t)
	var all []string
	for _, c := range g.Cases {
		all = append(all, c.Text)
	}
	r := rand.New(rand.NewPCG(9, 10))
	words := strings.Fields(strings.Join(all, " "))
	soup := make([]string, 5000)
	for i := range soup {
		soup[i] = words[r.IntN(len(words))]
	}
	b64 := make([]byte, 20000)
	const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := range b64 {
		b64[i] = digits[r.IntN(len(digits))]
	}
	return append(all,
		strings.Join(all, " "),
		strings.Join(soup, " "),
		strings.Join(soup, "\n"),
		string(b64),
		strings.Repeat("a", 20000),
		strings.Repeat("ab", 10000),
		strings.Repeat("the", 7000),
		strings.Repeat("ﬁ", 5000),
		strings.Repeat("記憶は", 3000),
		strings.Repeat("😀 a ", 3000),
		strings.Repeat("e\u0301", 3000),
		"https://example.com/"+strings.Repeat("path/", 4000),
	)
}

// TestEncodePrefixRealVocab: on the model's vocabulary, for the golden
// sentences and long texts of several kinds, EncodePrefix(s, n) is the first
// n ids of the full tokenization (for n = MaxTokens, what the model reads).
func TestEncodePrefixRealVocab(t *testing.T) {
	m := testModel(t)
	tok := m.Tokenizer()
	g := loadGolden(t)
	for _, c := range g.Cases {
		want := c.Tokens[:min(len(c.Tokens), m.MaxTokens())]
		if got := tok.EncodePrefix(c.Text, m.MaxTokens()); !slices.Equal(got, want) {
			t.Fatalf("EncodePrefix(%.60q, %d)\n got %v\nwant %v (golden)", c.Text, m.MaxTokens(), got, want)
		}
	}
	for _, s := range realTexts(t) {
		checkPrefixes(t, tok, s, 1, 10, m.MaxTokens(), 1000)
	}
}

// TestEncodePrefixBoundedWork: the first MaxTokens ids of a 4 MiB text cost
// what a short text costs. The full tokenization of the same text allocated
// about 600 MiB in the reference implementation.
func TestEncodePrefixBoundedWork(t *testing.T) {
	m := testModel(t)
	tok := m.Tokenizer()
	text := strings.Repeat("the quick brown fox jumps over the lazy dog. ", 4<<20/45)
	short := text[:2000]
	want := tok.EncodePrefix(short, m.MaxTokens())
	if len(want) != m.MaxTokens() {
		t.Fatalf("short text has %d ids", len(want))
	}
	if got := tok.EncodePrefix(text, m.MaxTokens()); !slices.Equal(got, want) {
		t.Fatalf("4 MiB text: %v, want %v", got, want)
	}
	long := testing.AllocsPerRun(5, func() { tok.EncodePrefix(text, m.MaxTokens()) })
	base := testing.AllocsPerRun(5, func() { tok.EncodePrefix(short, m.MaxTokens()) })
	if long > base {
		t.Errorf("allocations: %v for a 4 MiB text, %v for 2000 bytes of it", long, base)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tok.EncodePrefix(text, m.MaxTokens())
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("EncodePrefix of a 4 MiB text allocated %d bytes, want under 1 MiB", got)
	}
	t.Logf("EncodePrefix(4 MiB text, %d): %v allocations, %d bytes", m.MaxTokens(), long, after.TotalAlloc-before.TotalAlloc)
}

// FuzzEncodePrefix checks EncodePrefix and Encode against the reference on
// arbitrary input and prefix lengths.
func FuzzEncodePrefix(f *testing.F) {
	for i, s := range []string{"abc", "", " ", "\xff\xfe", "ﬁ:dd", "a\u200bb", "🍕 ab  c", strings.Repeat("d", 40)} {
		f.Add(s, uint8(i))
	}
	tok, err := NewTokenizer([]byte(testVocab))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string, n uint8) {
		checkPrefixes(t, tok, s, int(n))
	})
}

func BenchmarkEncodePrefixLong(b *testing.B) {
	m := testModel(b)
	text := strings.Repeat("the quick brown fox jumps over the lazy dog. ", 4<<20/45)
	b.ReportAllocs()
	for b.Loop() {
		m.Tokenizer().EncodePrefix(text, m.MaxTokens())
	}
}

func BenchmarkEncodeLong(b *testing.B) {
	m := testModel(b)
	for _, size := range []int{64 << 10, 1 << 20} {
		text := strings.Repeat("the quick brown fox jumps over the lazy dog. ", size/45)
		b.Run(fmt.Sprint(size>>10, "KiB"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.Tokenizer().Encode(text)
			}
		})
	}
}

// TestEmbedLongTextBoundedMemory: embedding a 4 MiB text allocates about
// what embedding its first paragraph does (it used to tokenize the whole
// text first, about 600 MiB), and gives the same vector.
func TestEmbedLongTextBoundedMemory(t *testing.T) {
	m := testModel(t)
	ctx := t.Context()
	text := strings.Repeat("the quick brown fox jumps over the lazy dog. ", 4<<20/45)
	short, err := m.Embed(ctx, []string{text[:2000]})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	long, err := m.Embed(ctx, []string{text})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(long[0], short[0]) {
		t.Error("the 4 MiB text and its first 2000 bytes embed differently")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("Embed of a 4 MiB text allocated %d MiB, want under 8 MiB", got>>20)
	}
}
