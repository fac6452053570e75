// Package recallbench measures strata's vector backends (issue 4): for each
// backend, the ingest rate, top-k query latency (p50, p99), queries per
// second at 1 and 4 concurrent clients, and recall@k against exact search,
// at several collection sizes. The command benchmarks/cmd/recallbench runs
// it and writes benchmarks/results/recall-backends.md; `make bench-recall`
// runs the command with a PostgreSQL + pgvector started by scripts/pg.sh.
//
// # Data
//
// Two kinds of dataset (see Dataset):
//
//   - Clustered: synthetic unit vectors from a hierarchy of clusters
//     around a shared mean direction (GenerateClustered, ClusterParams).
//     Real embeddings are clustered and anisotropic; independent Gaussian
//     vectors, where every point is about as far from every other, are a
//     worst case for approximate search that no real workload has. The
//     default parameters reproduce the default model's statistics on real
//     text at 10k records (nearest-neighbour and random-pair cosines; the
//     report prints both side by side).
//   - Text: the default embedding model's vectors (embed/uselite) of real
//     English sentences. With no network, the text is prose already on any
//     machine that builds this module: the Go distribution's documents
//     (the language specification, the memory model), the standard
//     library's doc comments, and Debian's licence texts when present
//     (Corpus). A seeded sample of sentences is embedded once and cached
//     (EmbedTexts).
//
// Queries are drawn from the same distribution as the indexed records but
// are never indexed themselves, as a user's question is not one of the
// stored memories.
//
// # Measures
//
// Each backend gets a fresh collection per dataset, opened with its
// defaults through the portable vectorstore API, which is what strata's
// memory layers use; the collection is dropped afterwards. Ingest is the
// wall time of Upsert in batches; a backend that indexes asynchronously
// (Qdrant) is also timed until its index is built. Latency and QPS come
// from back-to-back Query calls by 1 and N goroutines for a fixed time;
// recall@k is the overlap of the backend's top-k with the exact top-k
// computed here by brute force (ExactTopK), averaged over the queries.
//
// Latency and throughput phases run in rounds (three by default) and every
// figure is the median over them, so one burst of other work on a shared
// machine does not decide a figure. ScanLatency, a plain exact scan in Go
// over the same vectors, is measured alongside as a reference.
//
// # Beyond the defaults
//
// The report also answers the questions the targets raise when they are
// missed: recall and latency of HNSW backends at larger query candidate
// lists (Config.EfSearchSweep; for PostgreSQL, whether the planner still
// used the index), the time of pgvector's bulk path of loading without the
// index and building it afterwards (Config.BulkProbeSizes), and chromem
// with a dot-product collection, which the driver scans itself instead of
// chromem-go (Config.NoVariants turns it off).
//
// Speed is measured by this benchmark, never asserted in unit tests: the
// tests check that the pipeline runs, that recall meets the target
// on a small collection, and that the report is produced.
package recallbench
