// Package wirename maps strata function names to the tool names the
// provider APIs accept, and back. Anthropic's tool names and OpenAI's
// function names follow the same rule, ^[a-zA-Z0-9_-]{1,64}$, so both
// adapters share one mapping: a call recorded in history must render the
// same bytes whichever adapter sent it.
package wirename

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/stratamem/strata/core"
)

// MaxLen is the longest tool name the APIs accept.
const MaxLen = 64

// Name is the wire name of a strata function name: '/' becomes "__", any
// other character outside [a-zA-Z0-9_-] becomes '_', and a name still
// longer than MaxLen bytes keeps its first 55 bytes plus '_' and 8 hex
// digits of the original name's SHA-256, so long names stay distinct.
// It is a pure function: the same name always renders the same bytes.
func Name(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '/':
			b.WriteString("__")
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	out := b.String()
	if out == "" {
		return "_"
	}
	if len(out) > MaxLen {
		sum := sha256.Sum256([]byte(name))
		out = out[:MaxLen-9] + "_" + hex.EncodeToString(sum[:4])
	}
	return out
}

// CollisionError reports two tools of one request that map to the same
// wire name: the model's answer could not say which one it called.
type CollisionError struct {
	First, Second string // the strata names, in the order of the tools
	Wire          string // the name both map to
}

func (e *CollisionError) Error() string {
	return fmt.Sprintf("tools %q and %q both map to the tool name %q", e.First, e.Second, e.Wire)
}

// Table maps the wire names of one request's tools back to strata names.
type Table map[string]string

// NewTable builds the table for tools. Two tools sharing a wire name fail
// with a *CollisionError wrapped in invalid (the adapter's sentinel, so
// its callers match errors.Is on it); the same tool listed twice is not a
// collision.
func NewTable(tools []core.ToolSpec, invalid error) (Table, error) {
	names := make(Table, len(tools))
	for _, t := range tools {
		w := Name(t.Name)
		if prev, dup := names[w]; dup && prev != t.Name {
			err := &CollisionError{First: prev, Second: t.Name, Wire: w}
			if invalid == nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %w", invalid, err)
		}
		names[w] = t.Name
	}
	return names, nil
}

// Original returns the strata name of a wire name the model used. A name
// the request did not offer is returned as it is: the runtime then
// reports it as an unknown function rather than the adapter guessing.
func (n Table) Original(wire string) string {
	if name, ok := n[wire]; ok {
		return name
	}
	return wire
}
