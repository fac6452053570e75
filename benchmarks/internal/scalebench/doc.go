// Package scalebench measures how the semantic memory layer's costs grow
// with the history of one user, through the public API as a host uses it:
// session start (rt.Start: the layer's init reads the thread's latest
// messages; until the layer ranked in the collection it loaded every
// record of the resource into a mirror and built BM25), one exchange
// (Append user, Assemble, Record assistant), Layer.Search, and the
// process's RSS, at several history sizes, on the embedded store and on
// pgvector; and the ingest rate of new messages with a real embedder.
// benchmarks/cmd/scalebench runs it and writes the report.
//
// # Histories
//
// A history is a plan of generated conversations (Plan): sessions of
// 20-50 messages, user and assistant alternating, with varied text from
// fixed word lists and a seeded generator (no external data), a few hours
// to a day apart, all ending before 2026-01-01. Layout One puts the whole
// total in one resource (one user's history over years); layout Spread
// divides the same total over 1,000 resources, to tell what grows with
// the resource from what grows with the store. Vectors come from the
// hashing embedder at the default model's dimension (512), so the
// embedder is not the cost and vectors weigh what they would.
//
// # Loading
//
// Build writes a plan through sessions, one per conversation (Start,
// Append/Record each message with the store clock at its time,
// Complete), several at once, resumably, into an embedded.Open data
// directory that is then cached per layout and size (BuildCached builds
// on tmpfs, where fsync costs nothing, and copies the result). The layer
// offers no bulk path, and no record is written by hand: the loading
// sessions use a thread-scoped semantic layer, whose records are
// identical to a resource-scoped layer's (same ids, text, metadata,
// context records and vectors; TestThreadScopedLoadWritesResourceRecords
// checks it); a thread-scoped layer was what kept the load linear while
// the layer's Start still read its whole scope. pgvector collections
// are filled from a cached store's records (PreparePG) in one Upsert call,
// as `memctl migrate` moves a store.
//
// # Measuring
//
// Run measures one case on new threads of the probe resource (named
// afresh each run, as a host starts a new conversation, and deleted
// before and after, so the cached stores stay as loaded). Starts use the
// runtime's default timeouts: a start that fails its 10 s init timeout is
// counted as a failure, the case waits until the init left running on its
// goroutine has finished, and once a start failed one more is timed with
// the timeout raised (UnboundedInit) and the rest of the case runs on that
// runtime. Every phase stops after Config.PhaseCap once it has a few
// samples. Ingest writes new conversations into an empty store on the
// real disk with the default model (or the hashing embedder).
package scalebench
