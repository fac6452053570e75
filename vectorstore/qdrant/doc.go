// Package qdrant is the Qdrant driver of vectorstore, over gRPC with
// github.com/qdrant/go-client.
//
//	import _ "github.com/stratamem/strata/vectorstore/qdrant"
//	coll, err := vectorstore.Open(ctx, "qdrant://localhost:6334?collection=memories&dimension=384", nil)
//
// URL parameters beyond the common ones (collection, dimension, distance,
// metadata_keys): api_key (else $QDRANT_API_KEY), tls=true, exact=true,
// pool=N, timeout=10s. Any other parameter, a malformed query or a bad
// value is refused before connecting (vectorstore.ErrInvalidArgument, Field
// naming the parameter). OpenCollection takes an existing *qdrant.Client
// instead, with one Options (the portable vectorstore.Options embedded).
// To open URLs with other defaults for the driver's options, register a
// configured URLOpener (see vectorstore.URLOpener).
//
// vectorstore.Collection.As supports **qdrant.Client of
// github.com/qdrant/go-client (the collection's client, still owned by the
// collection) and *vectorstore.EmbedderRecorder (see MetaEmbedder).
//
// # Mapping
//
// A collection is a Qdrant collection with one unnamed dense vector
// (cosine, dot or Euclid). Qdrant point ids must be integers or UUIDs, so a
// record id maps to a deterministic UUIDv5 (PointID) and the original id is
// stored in the payload. Record fields are payload keys (id, layer, kind,
// thread, resource, text, created_at, valid_from, valid_to, revision, and
// writes for conditional writes) and metadata the nested object
// "metadata"; empty fields are left out. A record's lexical document
// (Record.Terms) is two parallel lists, "terms" (sorted) and
// "term_weights" (numbers): a term may hold '.' or any other character, so
// it is stored as a value, never as a payload key; neither list is
// indexed, and Query matches are fetched without them. Times are RFC
// 3339 strings with microseconds in datetime payload indexes, so time
// filters and ordering are exact at the vectorstore precision. Opening a
// collection creates the payload indexes the filters use: keyword on layer,
// kind, thread, resource and metadata.<k> for each Options.MetadataKeys,
// datetime on the three times, integer on revision.
//
// # Semantics the driver adds
//
// Qdrant neither orders equal scores nor equal order_by values, so the
// driver widens a query until the K-th score is strictly better than the
// worst one returned and breaks ties by record id itself; List fetches whole
// tie groups of created_at at the page edges for the same reason.
// Euclidean scores are negated Qdrant distances (higher is better). Writes
// use wait=true: a nil error means Qdrant applied the write and holds it in
// its write-ahead log. An Upsert of more than 256 records is sent as several
// requests, each atomic; a failure part-way leaves earlier requests applied.
// Queries use HNSW unless Options.Exact (URL exact=true) is set; Qdrant
// searches small collections exactly in any case. Each call whose context
// has no deadline is bounded by Options.Timeout (default 30 s), so a hung
// server fails the call with context.DeadlineExceeded instead of blocking
// it forever. DeleteWhere scans the matching ids, then deletes with the
// filter AND those ids, so a record moved out of the filter in between is
// kept.
//
// # Term search
//
// The driver does not implement driver.TermSearcher: the portable layer
// serves Collection.SearchTerms in process, listing the corpus (the
// records of the query's layer, kind, thread and resource) and ranking it
// with the reference BM25 of driver.RankTerms. That is exact, and ranks
// exactly like chromem and pgvector, but every search reads its whole
// corpus. Qdrant's own lexical ranking would not: the IDF modifier of its
// sparse vectors is computed over the whole collection, not over the
// corpus a query names, with its own formula, and document length
// normalisation would have to be baked into the stored values against a
// fixed average length, so its scores and orders would differ from the
// other backends'.
//
// # Revisions and conditional writes
//
// A point's revision is the integer payload key "revision" (indexed).
// Qdrant has no counter a write could draw from atomically, so revisions
// are clock values: the time in microseconds, raised above the last
// revision the collection handle wrote and, for UpsertIf, above the
// expected one. Within one process every write of an id therefore stores a
// greater revision. Across processes that holds as long as their clocks
// agree better than the time between two writes of one id: a plain Upsert
// from a process whose clock is behind can store a smaller revision than
// the one it replaces, and two plain Upserts of one id from two processes
// in the same microsecond can store the same one. UpsertIf always stores a
// revision greater than the one it replaced. Points written before
// revisions existed read as revision 1.
//
// UpsertIf is a conditional upsert of Qdrant 1.17: update_mode insert_only
// when expected is 0, otherwise update_only with update_filter "revision =
// expected". Qdrant checks the filter and writes in one operation of the
// shard, so of two writers expecting the same revision exactly one writes.
// But Qdrant's answer does not say whether the point was written or left
// alone, so UpsertIf reads the point before (a mismatch is a conflict
// without a write) and after writing: each conditional write stores a
// random 63-bit token in front of the point's last 32 (payload "writes"),
// and the write succeeded if and only if its token is there afterwards.
// The read back cannot decide, and reports a conflict, when between the
// write and the read back the point was deleted, replaced by a plain Upsert
// (which keeps no tokens) or written conditionally 32 more times; if the
// write had happened, the caller's retry applies its change a second time,
// on the newer state. DeleteIf deletes with the filter has_id AND revision,
// and succeeds when the point is gone afterwards (also when a concurrent
// delete removed it). A server older than 1.17 silently ignores update_mode
// and would write unconditionally, so UpsertIf and DeleteIf check the
// server version first (HealthCheck, once per handle) and fail with
// ErrNoConditionalWrites on older servers. Conditional writes use strong
// write ordering and their reads majority consistency, so that on a
// replicated collection the check, the write and the read back see one
// history. The protocol tests check them against the in-process fake (a
// single node that implements Qdrant's documented conditional-upsert
// semantics); TestConformance runs the same cases against a real server
// when STRATA_QDRANT_ADDR is set.
//
// # Tests
//
// TestConformance runs vectortest against a real server when
// STRATA_QDRANT_ADDR is set (see README.md). Without a server, the
// TestProtocol* tests run the driver over real gRPC against an in-process
// fake built on the client module's generated server stubs; they check the
// driver's wire behaviour, not Qdrant.
package qdrant
