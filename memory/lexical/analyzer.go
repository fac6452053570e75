package lexical

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// AnalyzerOptions configure an Analyzer. The zero value is the default
// English analysis: lower case, stopwords removed, Snowball (Porter2)
// stems.
type AnalyzerOptions struct {
	// NoStemming keeps words as they are (lower-cased); by default the
	// past forms of irregular verbs are mapped to their base form and
	// every English word is reduced to its Snowball stem.
	NoStemming bool
	// NoStopwords keeps stopwords as terms.
	NoStopwords bool
	// Stopwords are added to the built-in list (compared lower-cased,
	// before stemming).
	Stopwords []string
	// MaxTermBytes drops longer tokens (pasted hashes, base64 blobs): they
	// never match anything and would bloat the index. Zero means 64.
	MaxTermBytes int
}

// Analyzer turns text into index terms. It is immutable and safe for
// concurrent use.
type Analyzer struct {
	stem    bool
	stop    map[string]bool
	maxTerm int
}

// NewAnalyzer returns an analyzer configured by opts.
func NewAnalyzer(opts AnalyzerOptions) *Analyzer {
	a := &Analyzer{stem: !opts.NoStemming, maxTerm: opts.MaxTermBytes}
	if a.maxTerm <= 0 {
		a.maxTerm = 64
	}
	if !opts.NoStopwords {
		a.stop = make(map[string]bool, len(stopwords)+len(opts.Stopwords))
		for _, w := range stopwords {
			a.stop[w] = true
		}
		for _, w := range opts.Stopwords {
			a.stop[strings.ToLower(w)] = true
		}
	}
	return a
}

var defaultAnalyzer = NewAnalyzer(AnalyzerOptions{})

// DefaultAnalyzer is the analyzer of the zero AnalyzerOptions.
func DefaultAnalyzer() *Analyzer { return defaultAnalyzer }

// Terms returns the index terms of text in order of appearance, with
// repetitions. Words are maximal runs of letters and digits; an
// apostrophe inside a word is dropped with what follows it ("Anna's"
// gives "anna"), and negated auxiliaries ("don't", "won't") are dropped
// whole. Stopwords and one-letter words are removed; irregular past forms
// are mapped to their base and the rest is stemmed.
func (a *Analyzer) Terms(text string) []string {
	var out []string
	a.each(text, func(t string) { out = append(out, t) })
	return out
}

// each calls fn with every term of text.
func (a *Analyzer) each(text string, fn func(string)) {
	var word, tail strings.Builder
	skip := false // inside the tail of a word after an apostrophe
	flush := func() {
		w := word.String()
		// "don't", "won't", "isn't": a negated auxiliary, a function
		// word whatever its stem ("won" is also the past of "win").
		neg := skip && tail.String() == "t" && strings.HasSuffix(w, "n")
		word.Reset()
		tail.Reset()
		skip = false
		if w == "" || neg {
			return
		}
		if t, ok := a.term(w); ok {
			fn(t)
		}
	}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if skip {
				tail.WriteRune(unicode.ToLower(r))
			} else {
				word.WriteRune(unicode.ToLower(r))
			}
		case (r == '\'' || r == '\u2019') && word.Len() > 0 && !skip && i < len(text) && startsLetter(text[i:]):
			// "anna's", "we've": keep the word before the apostrophe.
			skip = true
		default:
			flush()
		}
	}
	flush()
}

func startsLetter(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLetter(r)
}

// term maps one lower-cased word to its term, or ok=false when the word
// is not indexed.
func (a *Analyzer) term(w string) (string, bool) {
	if len(w) > a.maxTerm {
		return "", false
	}
	if utf8.RuneCountInString(w) < 2 && !isDigits(w) {
		return "", false
	}
	if a.stem {
		if base, ok := irregular[w]; ok {
			w = base
		}
	}
	if a.stop[w] {
		return "", false
	}
	if a.stem && isASCIILetters(w) {
		// The Snowball English stemmer is defined on English letters;
		// other words (numbers, accented or non-Latin) are kept as they
		// are.
		w = english.Stem(w, true)
	}
	return w, true
}

func isASCIILetters(w string) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func isDigits(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < '0' || w[i] > '9' {
			return false
		}
	}
	return w != ""
}

// stopwords are function words that carry no topic: the Snowball English
// list plus contractions' leftovers and the most frequent conversational
// fillers, which in a chat log occur in nearly every turn and only add
// noise to the scores.
var stopwords = []string{
	"a", "about", "above", "after", "again", "against", "all", "am", "an",
	"and", "any", "are", "as", "at", "be", "because", "been", "before",
	"being", "below", "between", "both", "but", "by", "can", "could", "did", "do",
	"does", "doing", "don", "down", "during", "each", "few", "for", "from",
	"further", "had", "has", "have", "having", "he", "her", "here", "hers",
	"herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is",
	"it", "its", "itself", "just", "me", "more", "most", "my", "myself",
	"no", "nor", "not", "now", "of", "off", "on", "once", "only", "or",
	"other", "our", "ours", "ourselves", "out", "over", "own", "s", "same",
	"she", "should", "so", "some", "such", "t", "than", "that", "the", "their",
	"theirs", "them", "themselves", "then", "there", "these", "they",
	"this", "those", "through", "to", "too", "under", "until", "up",
	"very", "was", "we", "were", "what", "when", "where", "which", "while",
	"who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself",
	"yourselves", "also", "yes", "yeah", "ok", "okay", "oh", "well", "really",
	"let", "ll", "re", "ve", "d", "m", "hi", "hey", "thanks", "thank", "sure",
}
