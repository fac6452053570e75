// Package chromem is the embedded default driver of vectorstore, built on
// github.com/philippgille/chromem-go. It needs no server: a collection lives
// in a directory and is loaded into memory on open.
//
// Open it by URL after a blank import,
//
//	import _ "github.com/stratamem/strata/vectorstore/chromem"
//	coll, err := vectorstore.Open(ctx, "chromem:///var/lib/strata/vectors?collection=memories&dimension=384", nil)
//
// or directly with OpenCollection(ctx, dir, name, opts). URLOpener is the
// driver's URL opener (it has no options of its own).
//
// vectorstore.Collection.As supports no type: the driver has nothing to
// hand out beyond what the portable API offers.
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
// Every search is exact brute force, over as few records as the filter
// allows. The driver indexes its in-memory records by layer, thread and
// resource (scopeindex.go): for each value in use, the records holding it,
// sorted in List order (CreatedAt, ID). Every write maintains the index
// under the collection's lock, in the same step as the records; open builds
// it once from the replayed log, in O(n log n). A Query, List, Count or
// DeleteWhere whose filter names a layer, thread or resource (and no ids)
// visits only the smallest of those lists and tests each entry with
// Filter.Matches, so it returns exactly what a full scan would, while its
// cost follows the scope rather than the collection: a k=10 query over one
// user's 500 records takes about 0.1-0.2 ms in a collection of 10k, 100k or
// 200k records, where scanning the collection took 4, 95 and 190 ms
// (BenchmarkScopeQuery). A filter naming ids visits those ids. Count of a
// filter on one indexed field alone is the length of its list; List finds
// its cursor in the list by binary search and walks from there until the
// page is full, O(log n + s) for the s entries walked. The index costs one
// pointer per record and indexed non-empty field, 26-32 bytes per record
// with all three set (BenchmarkScopeIndexMemory); an empty field (a global
// record) is not indexed, since no filter can ask for it.
//
// chromem-go holds the vectors of cosine collections and answers the cosine
// queries the index does not narrow and whose filter it can express (kind
// and metadata equality, pushed into its where clause). It is given the
// records by the first such query, not at open, so that a collection
// queried by scope only never holds its second copy of every record's
// metadata. The driver adds
// what chromem-go lacks: ties broken by id also at the K boundary (it
// widens the chromem request until the boundary is strict), clamping K to
// the collection size (chromem-go errors otherwise), and a lock around
// chromem-go's Delete, which reads its document map before taking its own
// lock. Every other query, i.e. those the index narrows, those filtered by
// ids, creation time or validity, and every dot or Euclidean query
// (chromem-go only knows cosine), is scored by the driver in one pass over
// its candidates: chromem-go visits every document of the collection
// whatever its where clause, and filtering after its search would need
// repeated, widening passes (measured 2-7x slower, BenchmarkQueryTop10).
// Listing without an indexed field keeps the page's records of a full scan
// in a bounded heap, O(N log limit).
//
// # Vector layout and scoring
//
// The vectors of each resource's records live together in slabs, which
// the records' Vector slices point into (vectors.go; records without a
// resource keep their own), so that a query scoped to a resource reads
// them sequentially rather than one scattered heap object per record.
// Scores are float32 dot products or squared distances computed with the
// internal/vecmath kernels (AVX2+FMA on amd64 CPUs that have it, portable
// Go elsewhere), whose order of operations depends on the length only: the
// same vectors always score the same bits.
//
// A cosine or dot collection also keeps each of those vectors as int8
// codes with a per-vector error bound (a quarter of the bytes again, plus
// 8 bytes). A query within a resource (that no smaller index list narrows
// better) first bounds every score from the codes, then computes the exact
// score of the few records whose bound can still reach the top K, and
// tests the rest of its filter only on the records whose exact score would
// enter it. The results are those of a full exact scan, scores included; a
// query the bounds cannot settle falls back to a scan of the resource's
// vectors, testing the filter first if it refused most of the best
// candidates. For 100,000 512-d records in one resource, a K=280 query
// takes about 4 ms, where scoring the records one by one took 30-35 ms on
// the same machine (BenchmarkQueryResource). Deleted and replaced records
// leave dead slots until a resource has more dead slots than live ones,
// when its slabs are repacked.
//
// # Resident memory
//
// Where mmap is available (Linux, macOS, FreeBSD), the cold bulk of a
// collection is kept out of the Go heap, in an unlinked temporary file in
// the collection's directory, mapped read-only (slabfile_mmap.go): every
// full slab of vectors (the int8 codes, which every pruned query reads,
// stay on the heap), and the texts of the records replayed at open. The
// file is a cache of what the log holds, rebuilt at every open and gone
// with the process; its pages are page cache, which the kernel can
// reclaim, not anonymous memory. A query reads the vectors of its
// candidates and the texts of its results with pread, which maps nothing,
// so only scans of whole chains (and chromem-go's queries, and a
// compaction, after which the pages are dropped again) make the mapped
// pages resident. A record's document is held compactly (docs.go): its
// terms as numbers of a collection-wide table of names, with its weights.
// The strings decoded at open (layer, kind, scope, metadata) are shared
// between records. For 100,000 records of 512-d vectors, texts and
// documents of some 30 terms (50,000 messages of the semantic layer), the
// heap holds about 165 MiB after open, where holding everything took about
// 555 MiB; the pread of a candidate's vector costs about a microsecond, a
// few hundred per query of K = 280.
//
// # Term search
//
// Record.Terms, a record's lexical document, is logged with the record (a
// flag bit and the sorted terms after the vector, so that records without
// one encode exactly as before) and comes back from replay, compaction
// and Salvage like every other field; the collection holds it once, in
// compact form beside the stored record (docs.go). An older binary cannot read a record that has one:
// its replay takes the document for the bytes of what follows, which
// fails the open as CORRUPT, truncating nothing (unless they happen to
// decode).
//
// The driver implements driver.TermSearcher with an inverted index
// (termindex.go), so that SearchTerms costs the postings of the query's
// terms in its corpus, not a read of the corpus. Because a corpus is
// named by layer and optionally kind, resource and thread, the index keeps
// one group per (layer, kind, resource, thread) in use, with its document
// count, its total length (held exactly, so that the average length does
// not depend on the order of writes) and, per term, its postings (slot,
// weight) and document frequency. A search adds up the statistics of the
// groups its corpus spans (a resource-wide corpus lists its groups
// directly; a layer-wide one iterates the layer's), then scores. A small
// corpus is scored group by group, every posting of the query's terms. A
// large one is scored MaxScore-style: the rarer terms first, and once the
// commoner terms left cannot add up to the K-th best score so far (a
// term's contribution is bounded by its largest weight), their postings
// are skipped, and the few documents that could still reach the top K are
// scored exactly. Either way every score is computed with driver.BM25's
// expression and summation order, so the answers are driver.RankTerms'
// bit for bit whenever its own summation of the document lengths is exact,
// as it is for any weights of moderate spread. Filters on ids score those
// records alone; metadata and time filters are tested on the documents
// good enough for the top K only (a filter that refuses nearly everything
// therefore reads every candidate record).
//
// Nothing of it is built at open. The first search of a layer counts the
// layer's documents per group (one pass over the layer's scope-index
// list); the first search of a corpus builds the postings of its groups
// (each from the smallest scope-index list holding it), under the read
// lock, so writers wait for it. From then on every write maintains what is
// built, under the collection's lock like the scope index: a write appends
// to a group's small delta, a deletion leaves a tombstone, and a group is
// refrozen into its compact layout (a hash table of terms over one array
// of postings) once delta or tombstones reach a fraction of it. Over
// 100,000 messages of 30 terms (two users of 50,000, threads of 40), the
// built index takes about 750 bytes a message, 25 a posting; a search of
// one user's messages (K=50, five terms drawn like the documents', some
// 78,000 postings, of which it reads 7%) takes about 1 ms, one thread's
// about 10 µs, the whole layer's about 2 ms; the first search of a user
// builds its postings in about 0.25 s, of one thread in 16 ms (most of it
// counting the layer). See BenchmarkTermSearch, BenchmarkTermSearchFirst
// and BenchmarkTermIndexMemory.
package chromem
