// Package exportfmt is strata's export format, the file memctl export
// writes and memctl import reads to move memories between backends
// losslessly: JSON Lines, one memory record per line in the
// vectorstore.Record JSON form (id, layer, kind, scope, text, vector,
// metadata, created_at, valid_from, valid_to), optionally preceded by a
// header line describing the vectors, and followed by the runtime's state
// (since format version 2), one value of its state store per line: the
// layers' state (a todo list, the temporal layer's replay protection), the
// bindings of threads to their resources, the recorded assemblies:
//
//	{"memctl_export":2,"embedder":"hash-64","dimension":64,"distance":"cosine"}
//	{"id":"obs-…","layer":"observations","kind":"observation","scope":{"thread":"t1"},"text":"…","vector":[…],"metadata":{…},"created_at":"…"}
//	{"state":{"scope":"thread","scope_id":"t1","layer":"todo","name":"state"},"value":"eyJpdGVtcyI6W119"}
//
// A state value is opaque bytes, base64 in the line, so that it moves byte
// for byte whatever its format; its key is the storage.Key it had.
//
// The round trip is lossless: float32 vectors are written with the
// shortest digits that parse back to the same bits, times with their full
// (microsecond) precision in UTC. Unknown fields are refused, so a typo
// in a hand-written line is an error naming the line, not a silently
// dropped field. A record's revision, the version counter of the store it
// was read from, is not exported; one on an input line is read and ignored
// by the store it is imported into, which gives every record its own. The
// same holds for state values. Reader reads format versions 1 (records
// only) and 2.
package exportfmt
