// Package scratchpad is the spec's scratchpad layer (slot SCRATCHPAD, 100):
// working notes the model keeps for itself, as keys and values, shown to it
// on every turn.
//
// # Writing
//
// The model writes with the provided function "scratchpad/update"
// (the layer id, then "/update"):
//
//	{"set": {"plan": "1. read the file\n2. fix the test"}, "delete": ["draft"]}
//
// set merges keys into the notes (other keys stay); delete removes keys.
// Bad arguments (invalid JSON, wrong types, an empty key, a value over 8 KiB,
// more than 100 keys in one call, a key both set and deleted, a scratchpad
// grown past Options.MaxKeys) are rejected with a *core.ArgumentError whose
// message tells the model what to fix; the notes are left unchanged.
//
// The spec's function-call state pattern is supported too: the layer's store
// hook finds "scratchpad/update" calls among the items the model wrote and
// applies them, for hosts that record the call but do not route it. A call is
// applied exactly once, by call id, whichever path sees it first. With the
// usual loop (Session.Record the model's items, then Session.CallFunction
// for each call) the store hook applies it and the provided function answers
// the model with the same result; when the store hook rejected the call the
// provided function rejects it again, so its message still reaches the
// model. A call whose function_call_output was recorded with it (the host
// answered it itself, e.g. a denial) is not applied. Set
// Options.FunctionOnly to make the provided function the only write path,
// e.g. so a BeforeToolCall denial of a scratchpad write holds.
//
// # Storage
//
// Each key is one vectorstore record of kind "note" (text "key: value",
// metadata "key", "updated" and "scope"), with a deterministic id derived
// from the layer, the scope and the key, so memctl can list, search, edit
// and delete notes. Thread-scoped records carry the run's resource too, for
// listing; the thread alone (and the "scope" metadata, so a layer whose
// scope was changed does not read its old records) selects them. At init the layer loads its scope's notes into an in-memory mirror
// that recall renders from; writes update the records and the mirror
// together. The records are the memory: the runtime's scoped "state" value
// holds nothing, so a record edited or deleted with memctl is what the next
// run sees. Another session writing the same scope concurrently is seen by
// the next run, not by this one.
//
// # Rendering and caching
//
// The notes render as one developer message, one JSON-quoted "key": "value"
// pair per line, sorted by key. When they do not fit the layer's budget the
// most recently updated keys are kept and a line says how many were left
// out. Counting uses Options.Tokenizer; give it the runtime's tokenizer for
// exact fits.
//
// Placement is auto: how often the notes change depends on how often the
// model writes, which the runtime measures better than a guess. While the
// layer is anchored, a change is published with RenderDelta: only the keys
// that changed or were deleted, not the whole scratchpad.
package scratchpad
