// Package scratchpad is the scratchpad layer (slot core.SlotScratchpad, 100):
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
// The write happens when the host routes the call (Session.ExecuteTool), which the usual loop does after asking the
// steering layers (Session.BeforeToolCall), and only then: recording the
// call with Session.Record does not apply it, so a layer that denies a
// scratchpad write leaves the notes unchanged. The routed call's output is
// the result of the write ("ok: set \"plan\"; the scratchpad holds 1
// key.") or the rejection. The function-call state pattern (a store hook
// applying a plain, unoffered call name) has no name here: the
// scratchpad's only write path is its provided function, so every write
// can be steered. A call id is applied at most once per session: a replay
// is answered with the first application's output and writes nothing.
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
// out. Counting uses the runtime's token counter (core.RecallParams.Tokens),
// the one that cuts the layer's output, so the fit is exact.
//
// Placement is auto: how often the notes change depends on how often the
// model writes, which the runtime measures better than a guess. While the
// layer is anchored, a change is published with RenderDelta: only the keys
// that changed or were deleted, not the whole scratchpad.
package scratchpad
