package anthropic

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/stratamem/strata/core"
)

// maxToolName is the longest tool name the Messages API accepts.
const maxToolName = 64

// WireName is the tool name sent for a strata function name. Anthropic
// tool names must match ^[a-zA-Z0-9_-]{1,64}$, while provided functions
// are named "layer/fn": '/' becomes "__", any other character outside the
// set becomes '_', and a name still longer than 64 bytes keeps its first
// 55 bytes plus '_' and 8 hex digits of its SHA-256. The mapping is a
// pure function, so a call recorded in history renders the same bytes on
// every turn; responses are mapped back through the table built from the
// view's tools, which rejects two tools that would share a wire name.
func WireName(name string) string {
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
	if len(out) > maxToolName {
		sum := sha256.Sum256([]byte(name))
		out = out[:maxToolName-9] + "_" + hex.EncodeToString(sum[:4])
	}
	return out
}

// toolNames maps wire names back to strata names.
type toolNames map[string]string

func newToolNames(tools []core.FunctionSpec) (toolNames, error) {
	names := make(toolNames, len(tools))
	for _, t := range tools {
		w := WireName(t.Name)
		if prev, dup := names[w]; dup && prev != t.Name {
			return nil, fmt.Errorf("%w: tools %q and %q both map to the tool name %q", ErrInvalidRequest, prev, t.Name, w)
		}
		names[w] = t.Name
	}
	return names, nil
}

// original returns the strata name of a wire name the model used. A name
// the request did not offer is returned as it is: the runtime then
// reports it as an unknown function rather than the adapter guessing.
func (n toolNames) original(wire string) string {
	if name, ok := n[wire]; ok {
		return name
	}
	return wire
}
