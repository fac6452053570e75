package tiktoken

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	tiktokengo "github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/stratamem/strata/tokens"
)

// Encoding names accepted by New (which also accepts tokens.EstimateName).
const (
	O200kBase  = "o200k_base"
	Cl100kBase = "cl100k_base"
)

var (
	// ErrUnknownEncoding is returned by New for an encoding it does not know.
	ErrUnknownEncoding = errors.New("tiktoken: unknown encoding")
	// ErrUnknownModel is returned by ForModel for a model it cannot map to
	// an encoding.
	ErrUnknownModel = errors.New("tiktoken: unknown model")
)

func init() {
	// The default loader downloads the BPE files from openaipublic and
	// caches them under TIKTOKEN_CACHE_DIR. The offline loader reads the
	// copies embedded in the binary instead, so counting works without a
	// network and without writable disk. SetBpeLoader writes an unguarded
	// package variable, hence init, before any goroutine can build an
	// encoding.
	tiktokengo.SetBpeLoader(loader.NewOfflineLoader())
}

// bpe is a tiktoken-backed tokens.Tokenizer.
type bpe struct {
	name string
	enc  *tiktokengo.Tiktoken
}

// Count uses ordinary encoding, so special-token text is split like any
// other text instead of being mapped to (or rejected as) a special token.
// A *tiktoken.Tiktoken only reads its tables after construction and its
// regexp2 patterns are documented safe for concurrent use, so no lock is
// needed here (TestConcurrent checks it under -race).
func (b *bpe) Count(text string) int {
	if text == "" {
		return 0
	}
	return len(b.enc.EncodeOrdinary(text))
}

func (b *bpe) Name() string { return b.name }

// shared holds the one instance of each encoding for the process.
type shared struct {
	once sync.Once
	tok  *bpe
	err  error
}

var encodings = map[string]*shared{
	O200kBase:  {},
	Cl100kBase: {},
}

func (s *shared) get(name string) (*bpe, error) {
	s.once.Do(func() {
		enc, err := tiktokengo.GetEncoding(name)
		if err != nil {
			s.err = fmt.Errorf("tiktoken: building %s: %w", name, err)
			return
		}
		s.tok = &bpe{name: name, enc: enc}
	})
	return s.tok, s.err
}

// New returns the tokenizer for an encoding: "o200k_base", "cl100k_base" or
// "estimate". An unknown name yields an error wrapping ErrUnknownEncoding.
// The first call for a BPE encoding builds it (about a second); later calls
// return the shared instance immediately.
func New(encoding string) (tokens.Tokenizer, error) {
	if encoding == tokens.EstimateName {
		return tokens.Estimate(), nil
	}
	s, ok := encodings[encoding]
	if !ok {
		return nil, fmt.Errorf("%w: %q (want %s, %s or %s)", ErrUnknownEncoding, encoding, O200kBase, Cl100kBase, tokens.EstimateName)
	}
	tok, err := s.get(encoding)
	if err != nil {
		return nil, err
	}
	return tok, nil
}

// EncodingForModel returns the encoding name used for model, or an error
// wrapping ErrUnknownModel. Matching ignores case and a leading provider
// path such as "openai/" or "anthropic/".
//
//   - gpt-4o*, chatgpt-4o*, gpt-4.1*, gpt-4.5*, gpt-5*, o1*, o3*, o4*, gpt-oss*: o200k_base
//   - gpt-4*, gpt-3.5*, text-embedding-3-*, text-embedding-ada-002: cl100k_base
//   - claude*: o200k_base, as an approximation. Anthropic does not publish
//     its tokenizer; o200k_base is close for English prose but typically
//     undercounts by some percent, so leave headroom in budgets for Claude
//     models or calibrate with the usage figures the API returns.
func EncodingForModel(model string) (string, error) {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	switch {
	case m == "":
	case strings.HasPrefix(m, "gpt-4o"), strings.HasPrefix(m, "chatgpt-4o"),
		strings.HasPrefix(m, "gpt-4.1"), strings.HasPrefix(m, "gpt-4.5"),
		strings.HasPrefix(m, "gpt-5"), strings.HasPrefix(m, "gpt-oss"),
		oSeries(m, "o1"), oSeries(m, "o3"), oSeries(m, "o4"):
		return O200kBase, nil
	case strings.HasPrefix(m, "gpt-4"), strings.HasPrefix(m, "gpt-3.5"),
		strings.HasPrefix(m, "text-embedding-3-"), m == "text-embedding-ada-002":
		return Cl100kBase, nil
	case strings.HasPrefix(m, "claude"):
		return O200kBase, nil
	}
	return "", fmt.Errorf("%w: %q", ErrUnknownModel, model)
}

// oSeries matches "o1", "o1-mini", "o1-2024-12-17" but not "o10" or "o1x".
func oSeries(m, family string) bool {
	return m == family || strings.HasPrefix(m, family+"-")
}

// ForModel returns the tokenizer for a model name; see EncodingForModel for
// the mapping. An unknown model yields an error wrapping ErrUnknownModel.
func ForModel(model string) (tokens.Tokenizer, error) {
	enc, err := EncodingForModel(model)
	if err != nil {
		return nil, err
	}
	return New(enc)
}
