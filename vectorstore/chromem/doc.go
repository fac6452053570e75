// Package chromem is the embedded default driver of vectorstore, built on
// github.com/philippgille/chromem-go. It needs no server: a collection lives
// in a directory and is loaded into memory on open.
//
// Open it by URL after a blank import,
//
//	import _ "github.com/stratamem/strata/vectorstore/chromem"
//	coll, err := vectorstore.Open(ctx, "chromem:///var/lib/strata/vectors?collection=memories&dimension=384", nil)
//
// or directly with OpenCollection(ctx, dir, name, opts).
//
// # Storage and durability
//
// Each collection is a directory <dir>/<name> holding meta.json (dimension
// and distance, written atomically), records.log and a LOCK file. The log
// is append-only: every Upsert, Delete or DeleteWhere call appends one
// CRC-32C-checked frame and fsyncs it before returning, so an acknowledged
// write survives a crash, and a batch is applied entirely or not at all. On
// open the log is replayed; a torn last frame (a crash mid-append, never
// acknowledged) is cut off, while damage to earlier frames fails with
// vectorstore.ErrCorrupt rather than silently dropping acknowledged data.
// That includes a damaged length field (outside the checksum in log format
// 1): a frame claiming to run past the end of the file counts as torn only
// if no valid frame follows it (see wal.go). A replay that fails leaves the
// log untouched. When the log grows past twice the live data it is compacted by
// writing a new log and renaming it over the old one; a failed compaction
// (logged with log/slog) leaves a complete log in use, and if only the
// directory fsync after the rename failed, the next write retries it before
// appending. The LOCK file (flock on Unix) stops two processes from writing
// one collection: the second gets an error with code BUSY
// (vectorstore.ErrBusy, a *LockedError) naming the holder's pid, which the
// holder writes into LOCK.
//
// Damage at the end of the log is not silent either. records.ckpt, a
// two-slot checksummed sidecar written after every fsynced append (it may
// lag the log, never lead it), remembers how much of the log was
// acknowledged and the header of its last frame. On open a log shorter
// than the checkpoint, a changed last frame or a failed checksum inside
// the acknowledged part is ErrCorrupt, with the offsets; so is a missing
// records.log next to meta.json. A torn tail past the checkpoint is still
// cut, with a slog warning (offset, bytes), and the cut bytes are kept
// beside the log as records.log.torn-<offset>. Every CORRUPT error says how
// to recover: Salvage (memctl salvage) keeps every intact frame, moves the
// damaged log aside as records.log.damaged-<time> and writes a clean log.
// Logs written before the checkpoint existed open as before and gain one.
//
// chromem-go's own persistence is deliberately not used: it rewrites one gob
// file per document in place (os.Create, no fsync, no rename), so a crash
// can leave a torn file that makes the whole database fail to open, and it
// updates memory before the disk.
//
// Every record carries a revision, from a counter of the collection that
// every write advances under the collection's write lock. The same lock
// makes UpsertIf and DeleteIf atomic: the directory lock keeps other
// processes out, so comparing and writing under it is a compare-and-swap.
// The revision travels in the log frame of its write, as a reserved
// metadata entry ("$rev", which no user key can spell, stripped on replay);
// records logged before revisions existed are numbered in log order when
// replayed. Compaction, which forgets deleted records, first saves the
// counter in meta.json when a deleted record held the highest revision, so
// a reopened collection never hands a revision out twice.
//
// A URL takes the common parameters only (collection, dimension, distance,
// metadata_keys); any other is refused with vectorstore.ErrInvalidArgument
// naming it.
//
// # Search
//
// Both paths are exact brute force. chromem-go holds the vectors of cosine
// collections and answers cosine queries whose filter it can express: layer,
// kind, scope and metadata equality, pushed into its where clause. The
// driver adds what chromem-go lacks: ties broken by id also at the K
// boundary (it widens the chromem request until the boundary is strict),
// clamping K to the collection size (chromem-go errors otherwise), and a
// lock around chromem-go's Delete, which reads its document map before
// taking its own lock. Queries filtered by ids, creation time or validity,
// and every dot or Euclidean query (chromem-go only knows cosine), are
// scored by the driver in one pass over the matching records: filtering
// those after chromem's search would need repeated, widening chromem passes
// (measured 2-7x slower, BenchmarkQueryTop10). Listing is ordered by the
// driver with a bounded heap.
package chromem
