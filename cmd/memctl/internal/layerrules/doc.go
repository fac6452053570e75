// Package layerrules holds what memctl knows of the records each strata
// memory layer writes and reads back: the kinds, the scopes, the metadata
// a layer needs, the text it derives. memctl's add and edit run every
// record through Prepare and Check before it is embedded and written, so
// an operator's change is one the layer will read back, and a mistake is
// a one-line error naming the field instead of a memory the layer
// silently skips.
//
// What is checked (Check):
//
//   - common: a known layer type (episodic, semantic, entity,
//     observations, temporal, scratchpad), a kind that layer reads, text
//     that is not blank and at most 8 KiB of UTF-8 without NUL, valid
//     metadata keys and values, valid_to after valid_from;
//   - episodic, entity, scratchpad: metadata scope (thread, resource or
//     global) agreeing with the scope keys (a resource-scoped record has
//     no thread, a global one neither);
//   - semantic: a thread, metadata role user or assistant;
//   - observations, temporal: exactly one of thread and resource;
//     observations importance 1..5, sources a JSON array;
//   - entity: metadata name (at most 256 bytes) and type (person,
//     organization, place, concept, other), priority 0..10;
//   - temporal: metadata subject, predicate and value; the text is
//     derived from them;
//   - scratchpad: metadata key, the text "key: value".
//
// The vector store then applies its own validation (sizes, metadata
// keys, vector dimension) on write.
package layerrules
