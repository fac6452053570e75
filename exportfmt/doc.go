// Package exportfmt is strata's export format, the file memctl export
// writes and memctl import reads to move memories between backends
// losslessly: JSON Lines, one memory record per line in the
// vectorstore.Record JSON form (id, layer, kind, scope, text, vector,
// metadata, created_at, valid_from, valid_to), optionally preceded by a
// header line describing the vectors:
//
//	{"memctl_export":1,"embedder":"hash-64","dimension":64,"distance":"cosine"}
//	{"id":"obs-…","layer":"observations","kind":"observation","scope":{"thread":"t1"},"text":"…","vector":[…],"metadata":{…},"created_at":"…"}
//
// The round trip is lossless: float32 vectors are written with the
// shortest digits that parse back to the same bits, times with their full
// (microsecond) precision in UTC. Unknown fields are refused, so a typo
// in a hand-written line is an error naming the line, not a silently
// dropped field. A record's revision, the version counter of the store it
// was read from, is not exported; one on an input line is read and ignored
// by the store it is imported into, which gives every record its own.
package exportfmt
