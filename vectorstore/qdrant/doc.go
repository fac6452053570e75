// Package qdrant is the Qdrant driver of vectorstore, over gRPC with
// github.com/qdrant/go-client.
//
//	import _ "github.com/stratamem/strata/vectorstore/qdrant"
//	coll, err := vectorstore.Open(ctx, "qdrant://localhost:6334?collection=memories&dimension=384", nil)
//
// URL parameters beyond the common ones (collection, dimension, distance,
// metadata_keys): api_key (else $QDRANT_API_KEY), tls=true, exact=true,
// pool=N, timeout=10s. OpenCollection takes an existing *qdrant.Client
// instead.
//
// # Mapping
//
// A collection is a Qdrant collection with one unnamed dense vector
// (cosine, dot or Euclid). Qdrant point ids must be integers or UUIDs, so a
// record id maps to a deterministic UUIDv5 (PointID) and the original id is
// stored in the payload. Record fields are payload keys (id, layer, kind,
// thread, resource, text, created_at, valid_from, valid_to) and metadata
// the nested object "metadata"; empty fields are left out. Times are RFC
// 3339 strings with microseconds in datetime payload indexes, so time
// filters and ordering are exact at the vectorstore precision. Opening a
// collection creates the payload indexes the filters use: keyword on layer,
// kind, thread, resource and metadata.<k> for each Options.MetadataKeys,
// datetime on the three times.
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
// # Tests
//
// TestConformance runs vectortest against a real server when
// STRATA_QDRANT_ADDR is set (see README.md). Without a server, the
// TestProtocol* tests run the driver over real gRPC against an in-process
// fake built on the client module's generated server stubs; they check the
// driver's wire behaviour, not Qdrant.
package qdrant
