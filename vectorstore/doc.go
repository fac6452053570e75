// Package vectorstore is strata's portable store for memory records: one
// API over an embedded default (chromem) and scale-out backends (Postgres
// with pgvector, Qdrant), in the style of the Go CDK's docstore.
//
// A record (see Record) is a memory: id, layer, kind, thread/resource scope
// keys, text, embedding, string metadata, and created / valid-from /
// valid-to times. Users hold a *Collection, opened by
// URL with a blank-imported driver:
//
//	import _ "github.com/stratamem/strata/vectorstore/chromem"
//
//	coll, err := vectorstore.Open(ctx, "chromem:///var/lib/strata/vectors?collection=memories", &vectorstore.Options{Dimension: 384})
//
// The Collection offers Upsert (idempotent by id), Get, Delete, DeleteWhere,
// Count, List (keyset pagination in stable (CreatedAt, ID) order), All (an
// iterator over List), Query (exact top-k by vector with pre-filtering), and
// the conditional writes UpsertIf and DeleteIf.
//
// # Revisions and conditional writes
//
// The store stamps every write of a record with a new Revision, returned
// by Get, List and Query, greater than every revision that id had before
// (also across a Delete), so a revision identifies one stored version and
// never comes back. UpsertIf(rec, expected) writes only if the record is
// still at revision expected (0: only if it does not exist), as one atomic
// step of the backend; otherwise it writes nothing and fails with
// ErrConflict. Read, modify, UpsertIf with the revision read, and retry on
// ErrConflict: two processes updating one record that way never lose each
// other's update, where Get-modify-Upsert does. DeleteIf is the conditional
// delete. Plain Upsert stays unconditional (and bumps the revision).
// Revisions are not consecutive and their values are driver-specific (a
// counter, a sequence, a clock): pass them back as read, and compare them
// only within one collection. How each driver makes the conditional write
// atomic, and any limit it has, is in its package documentation.
//
// # Store URLs
//
// Open parses a URL's query strictly (see Open and Params): a parameter
// that cannot be read exactly as written is an error, never skipped.
//
// # Validation happens once, here
//
// Every input is validated before a driver sees it, so bad input fails the
// same way on every backend and nothing is written: an empty id
// (ErrInvalidRecord), a vector of the wrong length (ErrDimensionMismatch),
// an empty vector, NaN or ±Inf (ErrInvalidVector), a zero vector in a cosine
// collection or a squared norm above MaxSquaredNorm in a dot or Euclidean
// one (ErrInvalidVector), invalid UTF-8 or NUL bytes in strings, a
// metadata key outside [A-Za-z_][A-Za-z0-9_-]{0,63} (ErrInvalidRecord), a
// filter on a metadata key the collection does not admit
// (ErrUnknownFilterField, see Options.MetadataKeys), K outside 1..MaxK
// (ErrInvalidArgument). Errors are *Error values with a stable Code, the
// record ID and the Field; each also matches its sentinel with errors.Is.
//
// Metadata values are strings only. That is a decision, not a limitation of
// one backend: strings store, index and compare identically everywhere, and
// the values that need ranges (times) are first-class record fields.
//
// # Normalisation and determinism
//
// Times are stored in UTC at microsecond precision; a zero CreatedAt is
// stamped with Options.Now. Cosine collections store unit-length vectors,
// so every backend returns the same vector and Score is the cosine
// similarity. Query results are ordered by Score descending with ties
// broken by ascending ID, also at the K boundary; List order is (CreatedAt,
// ID). Scores are computed by each backend and may differ in the last float
// bits between backends, orders on exact ties never do.
//
// # Drivers
//
// A driver implements the small driver.Collection interface and registers a
// URL scheme with a URLOpener of its own (each driver package has a
// URLOpener struct holding its options, whose zero value it registers).
// Open uses DefaultURLMux; to open a scheme with other driver options,
// register a configured opener under a scheme of your own
// (RegisterURLOpener) or build a URLMux. A driver package also has an
// OpenCollection over a connection the caller owns, taking one options
// struct (chromem: vectorstore.Options; pgvector and qdrant: their Options,
// which embed vectorstore.Options). DriverConfig is the one place the
// portable options become a driver.Config. vectortest.Run is the
// conformance suite every driver passes; the drivers' openers at the
// driver level are unexported, their own tests run the suite over them.
//
// The portable type does not hand out its driver. Driver-specific types
// are reached with Collection.As, as in the Go CDK; each driver documents
// the types it supports (pgvector: **pgxpool.Pool and *EmbedderRecorder;
// qdrant: the go-client's **qdrant.Client and *EmbedderRecorder; chromem: none). Backend
// errors need no ErrorAs: the errors a call returns wrap the backend's
// error, so errors.As reaches it (a *pgconn.PgError, a gRPC status).
//
// # Why the data types are aliases
//
// Record, Scope, Filter, Match, Info, Distance, Terms, TermResult and the
// error types are aliases of the driver package's, where the Go CDK keeps
// separate portable types. They are plain data with no behaviour a driver
// could reach through them, so an alias leaks nothing a user could misuse;
// separate types would cost a conversion, copying every record, on every
// Upsert, Get, List and Query (a 10,000-record List page, a K=10,000
// query), and a conversion layer of the size of both type sets, touching
// every driver and every test that builds records for a driver. The
// driver package is the single definition of the record model; the
// portable package adds validation and normalisation over it, not another
// model.
package vectorstore
