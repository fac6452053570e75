package recallbench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/stratamem/strata/embed"
)

// Text sources. The benchmark has no network, so "real text" is English
// prose already on every machine that can build this module: the Go
// distribution's own documents and the standard library's doc comments,
// plus the Debian licence texts when present.
const (
	SourceGoDoc    = "go-doc"      // $GOROOT/doc/*.html: the language spec, the memory model, the assembler guide
	SourceGoSrc    = "go-comments" // doc comments of $GOROOT/src/**/*.go (no tests, testdata, vendor or generated files)
	SourceLicenses = "licenses"    // /usr/share/common-licenses/* (GPL, Apache, MPL, ...)
)

// DefaultLicenseDir is where Debian keeps the common licence texts.
const DefaultLicenseDir = "/usr/share/common-licenses"

// Sentence is one sentence of the real-text corpus and where it came from.
type Sentence struct {
	Text   string
	Source string // one of the Source* constants
}

// CorpusOptions say where the real-text corpus comes from. The zero value
// is not usable: GoRoot is required.
type CorpusOptions struct {
	// GoRoot is the Go distribution to read (`go env GOROOT`).
	GoRoot string
	// LicenseDir holds licence texts; "" means DefaultLicenseDir, "-" none.
	// A missing directory is skipped.
	LicenseDir string
}

// Corpus extracts every usable sentence from the sources, deduplicated, in
// a deterministic order (source, then file path, then position). A sentence
// is usable when it reads as prose: 40 to 300 bytes, starts with a capital
// letter, ends with '.', '?' or '!', and carries no code punctuation.
func Corpus(ctx context.Context, o CorpusOptions) ([]Sentence, error) {
	if o.GoRoot == "" {
		return nil, fmt.Errorf("%w: CorpusOptions.GoRoot is empty", ErrInvalidConfig)
	}
	if _, err := os.Stat(filepath.Join(o.GoRoot, "src")); err != nil {
		return nil, fmt.Errorf("%w: GoRoot %q has no src directory: %w", ErrInvalidConfig, o.GoRoot, err)
	}
	seen := make(map[string]bool)
	var out []Sentence
	add := func(src, para string) {
		for _, s := range splitSentences(para) {
			if usable(s) && !seen[s] {
				seen[s] = true
				out = append(out, Sentence{Text: s, Source: src})
			}
		}
	}

	docs, err := filepath.Glob(filepath.Join(o.GoRoot, "doc", "*.html"))
	if err != nil {
		return nil, err
	}
	slices.Sort(docs)
	for _, p := range docs {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("recallbench: read %s: %w", p, err)
		}
		for _, para := range htmlParagraphs(string(b)) {
			add(SourceGoDoc, para)
		}
	}

	ld := o.LicenseDir
	if ld == "" {
		ld = DefaultLicenseDir
	}
	if ld != "-" {
		ents, err := os.ReadDir(ld)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("recallbench: read %s: %w", ld, err)
		}
		for _, e := range ents { // ReadDir sorts by name
			if e.Type()&fs.ModeSymlink != 0 || e.IsDir() {
				continue // GPL -> GPL-3 and the like: read each text once
			}
			b, err := os.ReadFile(filepath.Join(ld, e.Name()))
			if err != nil {
				return nil, fmt.Errorf("recallbench: read licence: %w", err)
			}
			for _, para := range strings.Split(string(b), "\n\n") {
				add(SourceLicenses, para)
			}
		}
	}

	src := filepath.Join(o.GoRoot, "src")
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "vendor", "internal":
				// internal packages document implementation details in
				// terse notes; exported docs read more like prose.
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		paras, err := goComments(p)
		if err != nil {
			return err
		}
		for _, para := range paras {
			add(SourceGoSrc, para)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("recallbench: walk %s: %w", src, err)
	}
	return out, nil
}

var (
	reTag   = regexp.MustCompile(`(?s)<[^>]*>`)
	rePre   = regexp.MustCompile(`(?is)<pre[^>]*>.*?</pre>`)
	reStyle = regexp.MustCompile(`(?is)<(style|script)[^>]*>.*?</(style|script)>`)
	reBlock = regexp.MustCompile(`(?i)</?(p|h[1-6]|li|ul|ol|dl|dt|dd|table|tr|td|th|div|blockquote)[^>]*>`)
)

// htmlParagraphs strips an HTML document to its paragraphs of text; code
// blocks are dropped, inline markup is removed.
func htmlParagraphs(doc string) []string {
	if i := strings.Index(doc, "}-->"); i >= 0 {
		doc = doc[i+4:]
	}
	doc = rePre.ReplaceAllString(doc, "\n\n")
	doc = reStyle.ReplaceAllString(doc, "\n\n")
	doc = reBlock.ReplaceAllString(doc, "\n\n")
	doc = reTag.ReplaceAllString(doc, "")
	doc = html.UnescapeString(doc)
	return strings.Split(doc, "\n\n")
}

// goComments returns the paragraphs of the // comments of a Go file, or
// nothing for a generated file.
func goComments(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var paras []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			paras = append(paras, cur.String())
			cur.Reset()
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "// Code generated") && strings.HasSuffix(line, "DO NOT EDIT.") {
			return nil, nil
		}
		rest, ok := strings.CutPrefix(line, "//")
		if !ok || strings.HasPrefix(rest, "go:") {
			flush()
			continue
		}
		// An indented comment line is a code example in a doc comment.
		if strings.HasPrefix(rest, "\t") || strings.HasPrefix(rest, "   ") {
			flush()
			continue
		}
		rest = strings.TrimSpace(rest)
		if rest == "" {
			flush()
			continue
		}
		cur.WriteString(rest)
		cur.WriteByte(' ')
	}
	flush()
	return paras, sc.Err()
}

var abbreviations = []string{"e.g.", "i.e.", "etc.", "vs.", "Mr.", "Dr.", "cf.", "No.", "St."}

// splitSentences splits a paragraph (whitespace collapsed) after '.', '?'
// or '!' followed by a space and a capital letter, except after common
// abbreviations.
func splitSentences(para string) []string {
	para = strings.Join(strings.Fields(para), " ")
	var out []string
	start := 0
	for i := 0; i < len(para)-2; i++ {
		c := para[i]
		if c != '.' && c != '?' && c != '!' {
			continue
		}
		if para[i+1] != ' ' {
			continue
		}
		r, _ := utf8.DecodeRuneInString(para[i+2:])
		if !unicode.IsUpper(r) {
			continue
		}
		abbrev := false
		for _, a := range abbreviations {
			if strings.HasSuffix(para[start:i+1], " "+a) || para[start:i+1] == a {
				abbrev = true
				break
			}
		}
		if abbrev {
			continue
		}
		out = append(out, para[start:i+1])
		start = i + 2
	}
	if start < len(para) {
		out = append(out, para[start:])
	}
	return out
}

// usable reports whether s reads as a sentence of prose.
func usable(s string) bool {
	if len(s) < 40 || len(s) > 300 || !utf8.ValidString(s) {
		return false
	}
	first, _ := utf8.DecodeRuneInString(s)
	if !unicode.IsUpper(first) {
		return false
	}
	switch s[len(s)-1] {
	case '.', '?', '!':
	default:
		return false
	}
	if strings.ContainsAny(s, "{}[]<>=|\\`\t;:=&*#_") || strings.Contains(s, "//") || strings.Contains(s, "..") {
		return false
	}
	letters, words := 0, 0
	for _, r := range s {
		if unicode.IsLetter(r) || r == ' ' {
			letters++
		}
		if r == ' ' {
			words++
		}
	}
	if words < 6 || float64(letters) < 0.9*float64(utf8.RuneCountInString(s)) {
		return false
	}
	// Identifiers with dots or parentheses (fmt.Println, f(x)) make a
	// sentence about code rather than prose; allow a few.
	return strings.Count(s, "(") <= 1 && strings.Count(s, ".") <= 3
}

// Sample draws n sentences from the corpus without replacement, with a
// seeded shuffle, so the same corpus and seed give the same sample.
func Sample(corpus []Sentence, n int, seed uint64) ([]Sentence, error) {
	if n <= 0 || n > len(corpus) {
		return nil, fmt.Errorf("%w: need %d sentences, the corpus has %d", ErrNotEnoughText, n, len(corpus))
	}
	idx := make([]int, len(corpus))
	for i := range idx {
		idx[i] = i
	}
	r := rand.New(rand.NewPCG(seed, 0x7e47))
	r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	out := make([]Sentence, n)
	for i := range out {
		out[i] = corpus[idx[i]]
	}
	return out, nil
}

// EmbedOptions configure EmbedTexts.
type EmbedOptions struct {
	// CacheDir, when set, keeps the vectors in a file named by the SHA-256
	// of the model id and the texts, so a rerun skips the model.
	CacheDir string
	// Workers embed batches in parallel; 0 means 2.
	Workers int
	// Batch is the number of texts per Embed call; 0 means 64.
	Batch int
}

// EmbedTexts embeds texts with e, in order, reading and writing the cache
// of opts.CacheDir. It reports whether the vectors came from the cache.
func EmbedTexts(ctx context.Context, e embed.Embedder, texts []string, opts EmbedOptions) (vecs [][]float32, cached bool, err error) {
	if len(texts) == 0 {
		return nil, false, fmt.Errorf("%w: no texts to embed", ErrInvalidConfig)
	}
	var cachePath string
	if opts.CacheDir != "" {
		h := sha256.New()
		io.WriteString(h, e.Model())
		for _, t := range texts {
			var n [8]byte
			binary.LittleEndian.PutUint64(n[:], uint64(len(t)))
			h.Write(n[:])
			io.WriteString(h, t)
		}
		cachePath = filepath.Join(opts.CacheDir, "vectors-"+hex.EncodeToString(h.Sum(nil))[:24]+".f32")
		if v, err := readVectors(cachePath, len(texts)); err == nil {
			return v, true, nil
		}
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = 2
	}
	batch := opts.Batch
	if batch <= 0 {
		batch = 64
	}
	vecs = make([][]float32, len(texts))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := range next {
				hi := min(lo+batch, len(texts))
				v, err := e.Embed(ctx, texts[lo:hi])
				if err != nil {
					once.Do(func() { firstErr = err; cancel() })
					continue
				}
				copy(vecs[lo:hi], v)
			}
		}()
	}
feed:
	for lo := 0; lo < len(texts); lo += batch {
		select {
		case next <- lo:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, false, fmt.Errorf("recallbench: embed: %w", firstErr)
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if cachePath != "" {
		// The cache is an optimisation: failing to write it is not an error
		// of the benchmark.
		_ = writeVectors(cachePath, vecs)
	}
	return vecs, false, nil
}

const vecMagic = "RBV1"

func writeVectors(path string, vecs [][]float32) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.WriteString(vecMagic)
	binary.Write(&buf, binary.LittleEndian, uint32(len(vecs)))
	binary.Write(&buf, binary.LittleEndian, uint32(len(vecs[0])))
	for _, v := range vecs {
		binary.Write(&buf, binary.LittleEndian, v)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readVectors(path string, n int) ([][]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 12 || string(b[:4]) != vecMagic {
		return nil, errors.New("bad cache header")
	}
	cnt := int(binary.LittleEndian.Uint32(b[4:]))
	dim := int(binary.LittleEndian.Uint32(b[8:]))
	if cnt != n || dim <= 0 || len(b) != 12+4*cnt*dim {
		return nil, errors.New("bad cache size")
	}
	flat := make([]float32, cnt*dim)
	for i := range flat {
		flat[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[12+4*i:]))
		if math.IsNaN(float64(flat[i])) || math.IsInf(float64(flat[i]), 0) {
			return nil, errors.New("bad cache value")
		}
	}
	out := make([][]float32, cnt)
	for i := range out {
		out[i] = flat[i*dim : (i+1)*dim : (i+1)*dim]
	}
	return out, nil
}
