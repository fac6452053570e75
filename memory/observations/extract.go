package observations

import (
	"context"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stratamem/strata/core"
)

// Extractor turns conversation items into observations. The layer calls it
// from its store hook with the items recorded since the previous model
// call (minus its own record calls). Implement it with any model client:
// prompt the model for facts worth remembering and return them, setting
// Observation.From to the positions of the items each came from.
// Importance outside 1..5 is clamped and empty texts are dropped.
type Extractor interface {
	Extract(ctx context.Context, items []core.Item) ([]Observation, error)
}

// ExtractorFunc adapts a function to Extractor.
type ExtractorFunc func(ctx context.Context, items []core.Item) ([]Observation, error)

// Extract calls f.
func (f ExtractorFunc) Extract(ctx context.Context, items []core.Item) ([]Observation, error) {
	return f(ctx, items)
}

// Rules is the offline default Extractor. It is pattern-based, not a
// language model, and only as good as its patterns: it reads user
// messages only, English only, and only plain first-person statements such
// as "I am allergic to peanuts", "I work at Acme", "I live in Lyon",
// "I like green tea", "I don't eat meat", "I usually cycle to work",
// "I have two kids", "my favourite colour is blue", "my name is Anna",
// "I'm a nurse", "I'm vegetarian", "I'm 34 years old". Each becomes a
// third-person sentence ("User is allergic to peanuts") with a fixed
// importance per pattern (health and identity high, habits low).
//
// It does not infer ("I'm off to the hospital again" yields nothing), does
// not resolve references ("that one"), does not notice negation or irony
// beyond "don't"/"never", ignores questions, and splits sentences naively
// (an abbreviation such as "Dr." ends a sentence). Use a model-backed
// Extractor where recall matters; Rules keeps the layer useful offline and
// in tests.
type Rules struct {
	// Subject names the user in observations; "" means "User".
	Subject string
}

type rule struct {
	re *regexp.Regexp
	// build returns the observation text and importance for a match, or
	// ok=false to reject it.
	build func(s string, m []string) (text string, importance int, ok bool)
}

// Words that make a statement conversational rather than a fact about the
// user: "my question is", "I'm a bit lost".
var (
	stopMy = map[string]bool{
		"question": true, "problem": true, "point": true, "guess": true, "bad": true, "pleasure": true,
		"concern": true, "answer": true, "turn": true, "mistake": true, "apologies": true, "fault": true,
		"thought": true, "thinking": true, "understanding": true, "hope": true, "issue": true, "idea": true,
		"request": true, "code": true, "output": true, "error": true, "test": true, "last": true, "next": true,
	}
	stopA = map[string]bool{
		"bit": true, "little": true, "lot": true, "few": true, "moment": true, "second": true, "minute": true,
	}
)

var rules = []rule{
	{regexp.MustCompile(`(?i)^(?:my name is|my name's|call me|i'm called|i am called)\s+(.+)$`),
		func(s string, m []string) (string, int, bool) {
			return s + "'s name is " + m[1], 4, wordCount(m[1]) <= 4
		}},
	{regexp.MustCompile(`(?i)^i(?:'m| am)\s+(?:severely\s+|very\s+|deathly\s+|highly\s+)?allergic to\s+(.+)$`),
		func(s string, m []string) (string, int, bool) { return s + " is allergic to " + m[1], 5, true }},
	{regexp.MustCompile(`(?i)^i\s+(?:can't|cannot|can not)\s+(eat|drink|have|tolerate)\s+(.+)$`),
		func(s string, m []string) (string, int, bool) {
			return s + " cannot " + lower(m[1]) + " " + m[2], 4, true
		}},
	{regexp.MustCompile(`(?i)^i(?:'m| am)\s+(\d{1,3})\s+(?:years?|yrs?)\s+old$`),
		func(s string, m []string) (string, int, bool) { return s + " is " + m[1] + " years old", 3, true }},
	{regexp.MustCompile(`(?i)^i(?:'m| am)\s+(vegetarian|vegan|pescatarian|diabetic|pregnant|left-handed|right-handed|colou?r-?\s?blind|deaf|blind|married|single|divorced|widowed|retired|unemployed|self-employed)\b(.*)$`),
		func(s string, m []string) (string, int, bool) { return s + " is " + lower(m[1]) + m[2], 4, true }},
	{regexp.MustCompile(`(?i)^i(?:'m| am)\s+(a|an)\s+(\S+)(.*)$`),
		func(s string, m []string) (string, int, bool) {
			return s + " is " + lower(m[1]) + " " + m[2] + m[3], 3, !stopA[lower(m[2])] && wordCount(m[2]+m[3]) <= 8
		}},
	{regexp.MustCompile(`(?i)^i(?:'m| am)\s+(?:originally\s+)?from\s+(.+)$`),
		func(s string, m []string) (string, int, bool) { return s + " is from " + m[1], 3, true }},
	{regexp.MustCompile(`(?i)^i\s+(?:currently\s+|now\s+|still\s+)?(live|work|study)\s+(in|at|for|as|on)\s+(.+)$`),
		func(s string, m []string) (string, int, bool) {
			return s + " " + thirdPerson(lower(m[1])) + " " + lower(m[2]) + " " + m[3], importanceOf(lower(m[1])), true
		}},
	{regexp.MustCompile(`(?i)^i(?:'m| am)\s+(?:currently\s+|now\s+|still\s+)?(living|working|studying)\s+(in|at|for|as|on)\s+(.+)$`),
		func(s string, m []string) (string, int, bool) {
			verb := map[string]string{"living": "live", "working": "work", "studying": "study"}[lower(m[1])]
			return s + " " + thirdPerson(verb) + " " + lower(m[2]) + " " + m[3], importanceOf(verb), true
		}},
	{regexp.MustCompile(`(?i)^i\s+(?:don't|do not|never)\s+(like|eat|drink|use|want|drive|smoke|fly|own)\s+(.+)$`),
		func(s string, m []string) (string, int, bool) {
			if strings.Contains(strings.ToLower(m[0]), "never") {
				return s + " never " + thirdPerson(lower(m[1])) + " " + m[2], 3, true
			}
			return s + " does not " + lower(m[1]) + " " + m[2], 3, true
		}},
	{regexp.MustCompile(`(?i)^i\s+(?:really\s+|absolutely\s+|do\s+|also\s+|truly\s+)?(like|love|enjoy|prefer|hate|dislike|adore|detest)\s+(.+)$`),
		func(s string, m []string) (string, int, bool) {
			return s + " " + thirdPerson(lower(m[1])) + " " + m[2], 3, true
		}},
	{regexp.MustCompile(`(?i)^i\s+(always|usually|often|rarely|normally|sometimes|never)\s+([a-z]+)\b(.*)$`),
		func(s string, m []string) (string, int, bool) {
			return s + " " + lower(m[1]) + " " + thirdPerson(lower(m[2])) + m[3], 2, true
		}},
	{regexp.MustCompile(`(?i)^i\s+have\s+(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten)\s+(kids?|children|child|sons?|daughters?|dogs?|cats?|brothers?|sisters?|grandchildren|twins)\b(.*)$`),
		func(s string, m []string) (string, int, bool) {
			return s + " has " + lower(m[1]) + " " + m[2] + m[3], 3, true
		}},
	{regexp.MustCompile(`(?i)^i\s+(speak|own|drive|play|follow|ride|use)\s+(.+)$`),
		func(s string, m []string) (string, int, bool) {
			return s + " " + thirdPerson(lower(m[1])) + " " + m[2], 2, true
		}},
	{regexp.MustCompile(`(?i)^my\s+(.+?)\s+(is|are|was|were)\s+(.+)$`),
		func(s string, m []string) (string, int, bool) {
			// The capture may be only spaces the pattern's ASCII \s does
			// not take (a no-break space, or spaces the lazy group kept):
			// no word, no fact.
			words := strings.Fields(m[1])
			if len(words) == 0 {
				return "", 0, false
			}
			return s + "'s " + strings.Join(words, " ") + " " + lower(m[2]) + " " + m[3], 3, !stopMy[lower(words[0])] && len(words) <= 4
		}},
}

func importanceOf(verb string) int {
	if verb == "study" {
		return 3
	}
	return 4
}

var (
	clauseSplit = regexp.MustCompile(`(?i)(?:,\s*|\s+)(?:and|but|so|because|although|though)\s+(?:also\s+)?((?:i|my)\b)`)
	fillers     = regexp.MustCompile(`(?i)^(?:(?:well|actually|also|oh|ok|okay|so|and|but|btw|by the way|fyi|honestly|basically|just so you know|for the record|yeah|yes|no)\s*,?\s+)+`)
	pronouns    = regexp.MustCompile(`(?i)\b(my|me|mine|myself|i'm|i)\b`)
)

// Extract implements Extractor.
func (r Rules) Extract(_ context.Context, items []core.Item) ([]Observation, error) {
	subject := r.Subject
	if subject == "" {
		subject = "User"
	}
	var out []Observation
	seen := map[string]bool{}
	for i, it := range items {
		if it.Type != core.TypeMessage || it.Role != core.RoleUser {
			continue
		}
		for _, clause := range clauses(it.Text()) {
			text, imp, ok := matchRules(subject, clause)
			if !ok {
				continue
			}
			key := strings.ToLower(text)
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, Observation{Text: text, Importance: imp, From: []int{i}})
		}
	}
	return out, nil
}

func matchRules(subject, clause string) (string, int, bool) {
	for _, r := range rules {
		m := r.re.FindStringSubmatch(clause)
		if m == nil {
			continue
		}
		for k := 1; k < len(m); k++ {
			// The first-person words inside the captured object become
			// third person; the pattern's own words were rewritten by
			// build.
			m[k] = thirdPersonObject(m[k])
		}
		text, imp, ok := r.build(subject, m)
		if !ok {
			return "", 0, false
		}
		text = canonical(text)
		if len(text) > 300 {
			return "", 0, false // long clauses are rarely a single fact
		}
		return text, imp, true
	}
	return "", 0, false
}

// clauses splits a message into candidate statements: sentences and
// colon-led statements (questions dropped), then clauses joined by "and I", "but my", ... Leading fillers
// ("well, actually") are removed.
func clauses(text string) []string {
	text = strings.NewReplacer("\u2019", "'", "\u2018", "'").Replace(text)
	var out []string
	start := 0
	emit := func(s string, question bool) {
		if question {
			return
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return
		}
		cuts := clauseSplit.FindAllStringSubmatchIndex(s, -1)
		prev := 0
		for _, c := range cuts {
			out = appendClause(out, s[prev:c[0]])
			prev = c[2]
		}
		out = appendClause(out, s[prev:])
	}
	for i, r := range text {
		switch {
		case r == '.' || r == '!' || r == '?' || r == ';' || r == '\n',
			r == ':' && (i+1 == len(text) || text[i+1] == ' '): // "Quick note: I'm vegan"
			emit(text[start:i], r == '?')
			start = i + utf8.RuneLen(r)
		}
	}
	emit(text[start:], false)
	return out
}

func appendClause(out []string, s string) []string {
	s = strings.TrimSpace(fillers.ReplaceAllString(strings.TrimSpace(s), ""))
	s = strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
	if s == "" {
		return out
	}
	return append(out, s)
}

func thirdPersonObject(s string) string {
	return pronouns.ReplaceAllStringFunc(s, func(w string) string {
		switch strings.ToLower(w) {
		case "my":
			return "their"
		case "me":
			return "them"
		case "mine":
			return "theirs"
		case "myself":
			return "themselves"
		case "i'm":
			return "they're"
		}
		return "they"
	})
}

// thirdPerson conjugates an English verb for he/she: like -> likes,
// watch -> watches, study -> studies, have -> has.
func thirdPerson(v string) string {
	switch v {
	case "have":
		return "has"
	case "do":
		return "does"
	case "go":
		return "goes"
	case "be":
		return "is"
	case "":
		return v
	}
	for _, suf := range []string{"s", "sh", "ch", "x", "z", "o"} {
		if strings.HasSuffix(v, suf) {
			return v + "es"
		}
	}
	if n := len(v); n >= 2 && v[n-1] == 'y' && !strings.ContainsRune("aeiou", rune(v[n-2])) {
		return v[:n-1] + "ies"
	}
	return v + "s"
}

func lower(s string) string { return strings.ToLower(s) }

func wordCount(s string) int { return len(strings.Fields(s)) }
