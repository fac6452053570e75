package temporal

import (
	"context"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/stratamem/strata/core"
)

// Extractor turns conversation items into facts. The layer calls it from
// its store hook with the items recorded since the previous model call
// (minus its own function calls). Return When as the speaker said it
// ("last Friday"): the layer resolves it against the time of the item
// named first in From, so a model-backed extractor needs no clock. A When
// that does not resolve there is put back into Value and the fact kept,
// valid from the message.
type Extractor interface {
	Extract(ctx context.Context, items []core.Item) ([]Input, error)
}

// ExtractorFunc adapts a function to Extractor.
type ExtractorFunc func(ctx context.Context, items []core.Item) ([]Input, error)

// Extract calls f.
func (f ExtractorFunc) Extract(ctx context.Context, items []core.Item) ([]Input, error) {
	return f(ctx, items)
}

// Patterns is an offline Extractor for the ledger. It is pattern-based,
// not a language model: it reads user messages only, English only, and
// recognises a handful of first-person statements of a changing
// attribute, with an optional time phrase at the end:
//
//	I moved to Berlin last Friday          user · lives in: Berlin, when "last Friday"
//	I live in Lyon / I'm living in Lyon    user · lives in: Lyon
//	I started at Globex two weeks ago      user · works at: Globex
//	I work at Acme / I joined Acme         user · works at: Acme
//	my phone number is 555-0100            user · phone number: 555-0100
//	my manager changed to Dana yesterday   user · manager: Dana
//	I got married on June 6                user · marital status: married
//
// The time phrase is the longest tail ParseWhen understands, so "I moved
// to New York yesterday" gives "New York" and "yesterday", but a tail it
// does not know stays in the value ("I moved to Rome in the spring" gives
// "Rome in the spring"). It misses anything said otherwise; use a
// model-backed Extractor where recall matters. The layer uses no
// extractor unless Options.Extractor is set.
type Patterns struct {
	// Subject names the user in facts; "" means "user".
	Subject string
}

type factRule struct {
	re    *regexp.Regexp
	build func(m []string) (predicate, rest string, ok bool)
}

var (
	stopMyFact = map[string]bool{
		"question": true, "problem": true, "point": true, "guess": true, "bad": true, "pleasure": true,
		"concern": true, "answer": true, "turn": true, "mistake": true, "fault": true, "thought": true,
		"idea": true, "issue": true, "code": true, "output": true, "error": true, "hope": true, "request": true,
	}
	factRules = []factRule{
		{regexp.MustCompile(`(?i)^i(?: have| 've|'ve)?\s+(?:just\s+|recently\s+|finally\s+)?moved\s+(?:to|into)\s+(.+)$`),
			func(m []string) (string, string, bool) { return "lives in", m[1], true }},
		{regexp.MustCompile(`(?i)^i(?:'m| am)?\s+(?:now\s+|currently\s+)?(?:live|living)\s+in\s+(.+)$`),
			func(m []string) (string, string, bool) { return "lives in", m[1], true }},
		{regexp.MustCompile(`(?i)^i\s+(?:just\s+|recently\s+)?(?:started|began)\s+(?:working\s+|a new job\s+|my new job\s+)?(?:at|with|for)\s+(.+)$`),
			func(m []string) (string, string, bool) { return "works at", m[1], true }},
		{regexp.MustCompile(`(?i)^i(?:'m| am)?\s+(?:now\s+|currently\s+)?(?:work|working)\s+(?:at|for)\s+(.+)$`),
			func(m []string) (string, string, bool) { return "works at", m[1], true }},
		{regexp.MustCompile(`(?i)^i\s+(?:just\s+|recently\s+)?joined\s+(.+)$`),
			func(m []string) (string, string, bool) { return "works at", m[1], true }},
		{regexp.MustCompile(`(?i)^i\s+(?:just\s+)?got\s+(married|engaged|divorced)\b\s*(.*)$`),
			func(m []string) (string, string, bool) {
				return "marital status", strings.ToLower(m[1]) + " " + m[2], true
			}},
		{regexp.MustCompile(`(?i)^my\s+(.+?)\s+(?:is now|is|has changed to|changed to|became|switched to)\s+(.+)$`),
			func(m []string) (string, string, bool) {
				// The capture may be only spaces the pattern's ASCII \s
				// does not take (a no-break space, or spaces the lazy group
				// kept): no word, no fact.
				words := strings.Fields(strings.ToLower(m[1]))
				if len(words) == 0 {
					return "", "", false
				}
				return strings.Join(words, " "), m[2], !stopMyFact[words[0]] && len(words) <= 4
			}},
	}
	factFillers = regexp.MustCompile(`(?i)^(?:(?:well|actually|also|oh|ok|okay|so|and|but|btw|by the way|fyi|just so you know|for the record|yeah|yes|no|news)\s*[,:]?\s+)+`)
	factSplit   = regexp.MustCompile(`(?i)(?:,\s*|\s+)(?:and|but|so)\s+(?:also\s+)?((?:i|my)\b)`)
)

// Extract implements Extractor.
func (x Patterns) Extract(_ context.Context, items []core.Item) ([]Input, error) {
	subject := x.Subject
	if subject == "" {
		subject = "user"
	}
	// Time phrases are only split off here, not resolved: any fixed
	// reference tells whether ParseWhen understands the tail.
	probe := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	var out []Input
	for i, it := range items {
		if it.Type != core.TypeMessage || it.Role != core.RoleUser {
			continue
		}
		for _, clause := range factClauses(it.Text()) {
			for _, r := range factRules {
				m := r.re.FindStringSubmatch(clause)
				if m == nil {
					continue
				}
				pred, rest, ok := r.build(m)
				if !ok {
					break
				}
				value, when := splitWhen(strings.TrimSpace(rest), probe)
				if value == "" || len(value) > 200 {
					break
				}
				out = append(out, Input{Subject: subject, Predicate: pred, Value: value, When: when, From: []int{i}})
				break
			}
		}
	}
	return out, nil
}

// splitWhen splits a trailing time phrase off s: the longest tail of up to
// six words that ParseWhen understands.
func splitWhen(s string, probe time.Time) (value, when string) {
	words := strings.Fields(s)
	for k := min(6, len(words)); k >= 1; k-- {
		tail := strings.Join(words[len(words)-k:], " ")
		if _, err := ParseWhen(tail, probe, nil); err == nil {
			head := strings.Join(words[:len(words)-k], " ")
			head = strings.TrimRightFunc(head, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
			if head != "" {
				return head, tail
			}
		}
	}
	return s, ""
}

// factClauses splits a message into statements: sentences (questions
// dropped), then clauses joined by "and I", "but my", ...
func factClauses(text string) []string {
	text = strings.NewReplacer("\u2019", "'", "\u2018", "'").Replace(text)
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(factFillers.ReplaceAllString(strings.TrimSpace(s), ""))
		s = strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsPunct(r) && r != ')' || unicode.IsSpace(r) })
		if s != "" {
			out = append(out, s)
		}
	}
	// Sentences end at ". " (not inside "555.0100" or "Nov. 20"), "!",
	// "?", ";", ": " and newlines.
	var sentence strings.Builder
	flush := func(question bool) {
		s := sentence.String()
		sentence.Reset()
		if question {
			return
		}
		prev := 0
		for _, c := range factSplit.FindAllStringSubmatchIndex(s, -1) {
			add(s[prev:c[0]])
			prev = c[2]
		}
		add(s[prev:])
	}
	rs := []rune(text)
	for i, r := range rs {
		switch {
		case r == '?':
			flush(true)
		case r == '!' || r == ';' || r == '\n':
			flush(false)
		case r == ':' && (i+1 == len(rs) || unicode.IsSpace(rs[i+1])):
			flush(false) // "Big news: I moved ..."
		case r == '.' && (i+1 == len(rs) || unicode.IsSpace(rs[i+1])) && !abbrev(sentence.String()):
			flush(false)
		default:
			sentence.WriteRune(r)
		}
	}
	flush(false)
	return out
}

// abbrev reports whether s ends with a month abbreviation, whose period
// does not end the sentence ("on Nov. 20").
func abbrev(s string) bool {
	f := strings.Fields(s)
	if len(f) == 0 {
		return false
	}
	w := strings.ToLower(f[len(f)-1])
	_, ok := months[w]
	return ok && len(w) <= 4 && w != "may" && w != "june" && w != "july"
}
