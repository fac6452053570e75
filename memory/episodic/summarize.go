package episodic

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/stratamem/strata/core"
)

// Summarizer turns a run's log into an episode summary. Implementations
// may call a language model; an empty summary means "nothing worth
// remembering" and stores no episode.
type Summarizer interface {
	Summarize(ctx context.Context, items []core.Item) (string, error)
}

// SummarizerFunc adapts a function to Summarizer.
type SummarizerFunc func(ctx context.Context, items []core.Item) (string, error)

// Summarize implements Summarizer.
func (f SummarizerFunc) Summarize(ctx context.Context, items []core.Item) (string, error) {
	return f(ctx, items)
}

// ExtractiveSummarizer is the offline default Summarizer. It is extractive,
// not abstractive: it copies text out of the log and never paraphrases or
// infers. The summary has up to four lines:
//
//	Request: <the first user message>
//	Last request: <the last user message, when there were several>
//	Tools used: <function names in first-use order, ×count when repeated>
//	Result: <the start of the last assistant message>
//
// Messages are whitespace-collapsed and clipped at a sentence or word
// boundary. Developer and system messages (instructions, layer output) are
// not the run's content and are ignored. The result is deterministic: the
// same log gives the same summary. The zero value is ready to use.
type ExtractiveSummarizer struct {
	// MaxRequestChars clips each request line; 0 means 300.
	MaxRequestChars int
	// MaxResultChars clips the result line; 0 means 400.
	MaxResultChars int
}

// Summarize implements Summarizer.
func (e ExtractiveSummarizer) Summarize(ctx context.Context, items []core.Item) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	maxReq, maxRes := e.MaxRequestChars, e.MaxResultChars
	if maxReq <= 0 {
		maxReq = 300
	}
	if maxRes <= 0 {
		maxRes = 400
	}
	var (
		first, last, result string
		users               int
		tools               []string
		calls               = map[string]int{}
	)
	for _, it := range items {
		switch {
		case it.Type == core.TypeMessage && it.Role == core.RoleUser:
			if t := collapse(it.Text()); t != "" {
				users++
				if first == "" {
					first = t
				}
				last = t
			}
		case it.Type == core.TypeMessage && it.Role == core.RoleAssistant:
			if t := collapse(it.Text()); t != "" {
				result = t
			}
		case it.Type == core.TypeFunctionCall && it.Name != "":
			if calls[it.Name] == 0 {
				tools = append(tools, it.Name)
			}
			calls[it.Name]++
		}
	}
	var lines []string
	if first != "" {
		lines = append(lines, "Request: "+clip(first, maxReq))
	}
	if users > 1 && last != first {
		lines = append(lines, "Last request: "+clip(last, maxReq))
	}
	if len(tools) > 0 {
		named := make([]string, len(tools))
		for i, name := range tools {
			named[i] = name
			if n := calls[name]; n > 1 {
				named[i] = fmt.Sprintf("%s ×%d", name, n)
			}
		}
		lines = append(lines, "Tools used: "+strings.Join(named, ", "))
	}
	if result != "" {
		lines = append(lines, "Result: "+clip(result, maxRes))
	}
	return strings.Join(lines, "\n"), nil
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip shortens s to at most max runes (plus an ellipsis), cutting after a
// sentence when one ends in the second half of the allowance, else at a
// word boundary.
func clip(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	cut := s
	n := 0
	for i := range s {
		if n == max {
			cut = s[:i]
			break
		}
		n++
	}
	half := len(cut) / 2
	best := -1
	for _, end := range []string{". ", "! ", "? "} {
		if i := strings.LastIndex(cut, end); i >= half && i+1 > best {
			best = i + 1
		}
	}
	if best > 0 {
		return cut[:best] + " …"
	}
	if i := strings.LastIndexByte(cut, ' '); i >= half {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:") + " …"
}
