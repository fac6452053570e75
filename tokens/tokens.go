package tokens

import "unicode/utf8"

// EstimateName is the name of the heuristic tokenizer returned by Estimate.
const EstimateName = "estimate"

// Tokenizer counts the tokens of a text. Implementations are safe for
// concurrent use.
type Tokenizer interface {
	// Count returns the number of tokens in text; 0 for "".
	Count(text string) int
	// Name returns the encoding name: "o200k_base", "cl100k_base" or "estimate".
	Name() string
}

// Estimate returns the heuristic tokenizer: ceil(utf8 runes / 4), and 0 for
// "". Four characters per token is the usual rule of thumb for English with
// the OpenAI encodings; it undercounts CJK text and dense code and overcounts
// long common words, so use it where speed matters more than precision.
// Invalid UTF-8 bytes count as one rune each.
func Estimate() Tokenizer { return estimate{} }

type estimate struct{}

func (estimate) Count(text string) int {
	n := utf8.RuneCountInString(text)
	return (n + 3) / 4
}

func (estimate) Name() string { return EstimateName }
