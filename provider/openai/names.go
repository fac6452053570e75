package openai

import "github.com/stratamem/strata/provider/internal/wirename"

// WireName is the function name sent for a strata function name. OpenAI
// function names must match ^[a-zA-Z0-9_-]{1,64}$, while provided functions
// are named "layer/fn": '/' becomes "__", any other character outside the
// set becomes '_', and a name still longer than 64 bytes keeps its first
// 55 bytes plus '_' and 8 hex digits of its SHA-256. The mapping is a
// pure function, so a call recorded in history renders the same bytes on
// every turn; responses are mapped back through the table built from the
// view's tools, which rejects two tools that would share a wire name.
func WireName(name string) string { return wirename.Name(name) }
