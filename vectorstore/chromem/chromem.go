package chromem

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	chromemgo "github.com/philippgille/chromem-go"

	"github.com/stratamem/strata/internal/fsutil"
	"github.com/stratamem/strata/internal/vecmath"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

const (
	metaFile   = "meta.json"
	logFile    = "records.log"
	lockName   = "LOCK"
	metaFormat = 1
	// Compaction rewrites the log once it is larger than compactMinBytes
	// and more than twice the size of the live records.
	compactMinBytes = 1 << 20
	// compactChunk records per frame in a compacted log.
	compactChunk = 512
)

// Reserved chromem metadata keys for the record fields pushed down into
// chromem's where filter. User metadata keys match [A-Za-z_][A-Za-z0-9_-]*,
// so a leading '$' can never collide with them.
const (
	keyLayer    = "$layer"
	keyKind     = "$kind"
	keyThread   = "$thread"
	keyResource = "$resource"
)

// keyRevision carries a record's revision through the log: the log format
// (wal.go) has no field for it, and a metadata entry is stored and replayed
// verbatim by every version of it. The '$' keeps it apart from user keys
// ([A-Za-z_][A-Za-z0-9_-]*); it lives in log frames only, never in memory,
// in chromem-go's documents or in what a read returns. A record logged
// before revisions existed has no entry and is given the next revision of
// the collection when replayed.
const keyRevision = "$rev"

type meta struct {
	Format    int             `json:"format"`
	Name      string          `json:"name"`
	Dimension int             `json:"dimension"`
	Distance  driver.Distance `json:"distance"`
	// Revision is the highest revision handed out when the log was last
	// compacted. Compaction drops deleted records, whose revisions the
	// replay of the new log can no longer see; the counter restarts above
	// this floor so that a deleted id written again never gets one of its
	// old revisions back.
	Revision int64 `json:"revision,omitempty"`
}

// OpenCollection opens, creating if needed, the collection name stored under
// dir and wraps it in the portable type. opts.Dimension is required to
// create the collection; opts may be nil to reopen an existing one with its
// stored dimension and distance.
func OpenCollection(ctx context.Context, dir, name string, opts *vectorstore.Options) (*vectorstore.Collection, error) {
	d, err := openDriver(ctx, dir, vectorstore.DriverConfig(name, opts))
	return vectorstore.WrapOpened(d, err, opts)
}

// openDriver opens the driver-level collection cfg.Name under dir, for
// OpenCollection, the URL opener and this package's tests.
func openDriver(ctx context.Context, dir string, cfg driver.Config) (driver.Collection, error) {
	const op = "open"
	if dir == "" {
		return nil, driver.Errorf(driver.CodeInvalidArgument, op, "dir", "empty directory")
	}
	if !validName(cfg.Name) {
		return nil, driver.Errorf(driver.CodeInvalidArgument, op, "collection", "collection name %q must match [A-Za-z0-9_-]{1,128} (it names a directory)", cfg.Name)
	}
	if cfg.Distance != "" {
		// Store, compare and score by the canonical name, never an alias.
		d, err := driver.ParseDistance(string(cfg.Distance))
		if err != nil {
			return nil, err
		}
		cfg.Distance = d
	}
	if cfg.Dimension < 0 {
		return nil, driver.Errorf(driver.CodeInvalidArgument, op, "dimension", "negative dimension %d", cfg.Dimension)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cdir := filepath.Join(dir, cfg.Name)
	if err := os.MkdirAll(cdir, 0o700); err != nil {
		return nil, fmt.Errorf("chromem: create %s: %w", cdir, err)
	}
	lock, err := os.OpenFile(filepath.Join(cdir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("chromem: open lock: %w", err)
	}
	if err := lockFile(lock); err != nil {
		lock.Close()
		return nil, err
	}
	c, err := open(ctx, cdir, cfg, lock)
	if err != nil {
		lock.Close()
		return nil, err
	}
	return c, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 128 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// collection is the chromem driver. chromem-go's in-memory collection holds
// the cosine vectors and answers cosine top-k queries (exact brute force);
// the driver adds what chromem-go lacks: a crash-safe log (its own
// persistence truncates and rewrites one gob file per document with no
// fsync or rename, so a crash can leave a torn file that makes the whole
// database unopenable), record fields and time filters, deterministic tie
// breaking, dot/Euclidean scoring, ordered listing, an index by layer,
// thread and resource that bounds a scoped call by its scope
// (scopeindex.go), and a lock around chromem's Delete (which reads its
// document map before locking).
type collection struct {
	dir  string
	info driver.Info

	// wmu serialises writers: log append + fsync happen under wmu only, so
	// readers are not blocked while a write waits for the disk. Revisions
	// are assigned and conditional writes checked under wmu too, which
	// makes UpsertIf and DeleteIf atomic: the directory lock keeps every
	// other process out, and wmu every other writer of this one.
	wmu    sync.Mutex
	rev    int64 // the last revision handed out; guarded by wmu
	meta   meta  // as last written to meta.json; guarded by wmu
	log    *os.File
	lock   *os.File
	ckpt   *checkpoint // what of the log is acknowledged (checkpoint.go)
	size   int64       // bytes of good frames in the log
	failed error       // sticky: a failed append that could not be rolled back
	// dirDirty: a compaction renamed its new log into place but the
	// directory fsync after the rename failed. The next append retries the
	// fsync first, so nothing is acknowledged in a file whose directory
	// entry might not survive a crash.
	dirDirty bool

	// mu guards the in-memory state below; writers hold it only to apply.
	mu sync.RWMutex
	// recs holds the records, immutable once stored but for their Vector,
	// which vecs may move to other memory holding the same values (under
	// mu held exclusively).
	recs map[string]*driver.Record
	// docs holds the documents of the records in recs that have one
	// (docs.go); their Terms field is nil.
	docs *docTable
	// idx indexes recs by layer, thread and resource (scopeindex.go), so
	// that a call filtered by any of them touches only those records. It
	// is built once the replay at open is done, then maintained by
	// applyUpsert and applyDelete.
	idx scopeIndex
	// vecs keeps the vectors of each resource's records in contiguous
	// slabs (vectors.go), for scoped queries to read sequentially; built
	// and maintained with idx.
	vecs vecStore
	// terms is the lexical index of the records' Terms (termindex.go),
	// built lazily by the first searches that need it and from then on
	// maintained with idx.
	terms termIndex
	live  int64                 // approximate encoded size of live records
	chr   *chromemgo.Collection // nil unless cosine
	// chrMu guards chrBuilt: chromem-go is given the records by the first
	// query it answers (ensureChromem, under mu shared), not at open, so
	// that a collection queried by scope only never holds a second copy
	// of every record's metadata (nor reads every vector at open). Once
	// built, writers (holding mu exclusively) keep it up to date.
	chrMu     sync.Mutex
	chrBuilt  bool
	closed    bool
	compacted int // number of compactions, for tests
	// compactErr is the last compaction's failure, nil after a success; the
	// write that triggered it was durable already, so it is only reported
	// (to the default slog logger) and kept here for tests.
	compactErr error
}

// The driver ranks SearchTerms from its own index (termindex.go).
var _ driver.TermSearcher = (*collection)(nil)

func noEmbedding(context.Context, string) ([]float32, error) {
	return nil, errors.New("chromem driver: embeddings are computed by the caller")
}

func open(ctx context.Context, cdir string, cfg driver.Config, lock *os.File) (*collection, error) {
	const op = "open"
	m, err := readMeta(cdir)
	fresh := errors.Is(err, fs.ErrNotExist) // a log may be missing only then
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if cfg.Dimension == 0 {
			return nil, driver.Errorf(driver.CodeInvalidArgument, op, "dimension", "collection %q does not exist; a dimension is required to create it", cfg.Name)
		}
		if cfg.Distance == "" {
			cfg.Distance = driver.DistanceCosine
		}
		m = meta{Format: metaFormat, Name: cfg.Name, Dimension: cfg.Dimension, Distance: cfg.Distance}
		if err := writeMeta(cdir, m); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		if cfg.Dimension != 0 && cfg.Dimension != m.Dimension {
			return nil, driver.Errorf(driver.CodeConfigMismatch, op, "dimension", "collection %q has dimension %d, opened with %d", cfg.Name, m.Dimension, cfg.Dimension)
		}
		if cfg.Distance != "" && cfg.Distance != m.Distance {
			return nil, driver.Errorf(driver.CodeConfigMismatch, op, "distance", "collection %q has distance %s, opened with %s", cfg.Name, m.Distance, cfg.Distance)
		}
	}
	c := &collection{
		dir:  cdir,
		info: driver.Info{Name: cfg.Name, Dimension: m.Dimension, Distance: m.Distance, Driver: "chromem"},
		lock: lock,
		recs: make(map[string]*driver.Record),
		docs: newDocTable(),
		rev:  m.Revision,
		meta: m,
	}
	c.terms.docs = c.docs
	if m.Distance == driver.DistanceCosine {
		c.chr, err = chromemgo.NewDB().CreateCollection(cfg.Name, nil, noEmbedding)
		if err != nil {
			return nil, fmt.Errorf("chromem: %w", err)
		}
	}
	// The slab file takes the replayed records' texts as they are decoded
	// (textSink), then the vectors once the chains are built.
	c.vecs.file = openSlabFile(cdir)
	sink := &replaySink{docs: c.docs, texts: newTextSink(c.vecs.file)}
	f, good, ck, err := openLog(cdir, fresh, sink, func(e entry, _ int) error {
		switch e.op {
		case opUpsert:
			for i := range e.recs {
				if len(e.recs[i].Vector) != m.Dimension || e.recs[i].ID == "" {
					return driver.Errorf(driver.CodeCorrupt, op, "", "log record %q has %d dimensions, collection %d", e.recs[i].ID, len(e.recs[i].Vector), m.Dimension)
				}
				if err := c.replayRevision(&e.recs[i]); err != nil {
					return err
				}
			}
			c.applyUpsert(ctx, e.recs, e.docs)
		case opDelete:
			c.applyDelete(ctx, e.ids)
		}
		return nil
	})
	if err != nil {
		c.vecs.close()
		return nil, err
	}
	// Indexed once, from the replayed records: maintaining the index frame
	// by frame would move list tails for every record logged out of
	// creation order (a compacted log is in id order).
	c.idx.build(c.recs)
	c.vecs.build(m.Dimension, m.Distance, c.idx.by[fieldResource])
	c.log, c.size, c.ckpt = f, good, ck
	if c.needsCompaction() {
		// The replayed log is intact, so a failed compaction costs space,
		// not data: report it and go on, as after a write.
		if err := c.compact(); err != nil {
			if c.failed != nil {
				c.log.Close()
				c.ckpt.close()
				c.vecs.close()
				return nil, err
			}
			c.compactErr = err
			slog.Warn("chromem: compaction at open failed; the log is intact and stays in use", "dir", cdir, "err", err)
		}
	}
	return c, nil
}

// minMappedText is the shortest text the replay at open moves off the
// heap, into the slab file (textSink).
const minMappedText = 32

func readMeta(cdir string) (meta, error) {
	b, err := os.ReadFile(filepath.Join(cdir, metaFile))
	if err != nil {
		return meta{}, err
	}
	var m meta
	if err := json.Unmarshal(b, &m); err != nil {
		return meta{}, driver.Errorf(driver.CodeCorrupt, "open", "", "%s: %v (restore meta.json from a backup; records.log is untouched)", filepath.Join(cdir, metaFile), err)
	}
	if m.Format != metaFormat || m.Dimension <= 0 {
		return meta{}, driver.Errorf(driver.CodeCorrupt, "open", "", "%s: unsupported format %d or dimension %d (restore meta.json from a backup; records.log is untouched)", filepath.Join(cdir, metaFile), m.Format, m.Dimension)
	}
	d, err := driver.ParseDistance(string(m.Distance))
	if err != nil {
		return meta{}, driver.Errorf(driver.CodeCorrupt, "open", "", "%s: %v (restore meta.json from a backup; records.log is untouched)", filepath.Join(cdir, metaFile), err)
	}
	// Earlier versions stored the distance as given: read an alias as
	// its canonical distance.
	m.Distance = d
	return m, nil
}

// writeMeta writes meta.json atomically: temp file, fsync, rename, fsync dir.
func writeMeta(cdir string, m meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	_, err = writeAtomic(cdir, metaFile, func(f *os.File) error {
		_, err := f.Write(append(b, '\n'))
		return err
	})
	return err
}

// writeAtomic replaces cdir/name: temp file, fill, fsync, rename, fsync dir.
// renamed reports whether the rename happened: then the new file is in
// place (and the old one unlinked) even if err reports the failed directory
// fsync, and the caller must act on the new file.
func writeAtomic(cdir, name string, fill func(*os.File) error) (renamed bool, err error) {
	tmp, err := fsutil.WriteTemp(cdir, name, fill, fsutil.Options{Temp: name + ".tmp"})
	if err == nil {
		if err = os.Rename(tmp, filepath.Join(cdir, name)); err != nil {
			_ = os.Remove(tmp)
		}
	}
	if err != nil {
		return false, fmt.Errorf("chromem: write %s: %w", name, err)
	}
	if err := syncDir(cdir); err != nil {
		return true, fmt.Errorf("chromem: write %s: renamed into place, but: %w", name, err)
	}
	return true, nil
}

// syncDirFault is a fault-injection seam for tests: when set, syncDir calls
// it first and fails with its error. It is nil outside tests.
var syncDirFault func(dir string) error

// syncDir is fsutil.SyncDir behind the test seam syncDirFault.
func syncDir(dir string) error {
	if syncDirFault != nil {
		if err := syncDirFault(dir); err != nil {
			return fmt.Errorf("chromem: sync dir: %w", err)
		}
	}
	if err := fsutil.SyncDir(dir); err != nil {
		return fmt.Errorf("chromem: %w", err)
	}
	return nil
}

// replayRevision moves the revision of a replayed record from its log
// metadata to Record.Revision and advances the counter past it.
func (c *collection) replayRevision(r *driver.Record) error {
	v, ok := r.Metadata[keyRevision]
	if !ok {
		c.rev++ // logged before revisions existed
		r.Revision = c.rev
		return nil
	}
	rev, err := strconv.ParseInt(v, 10, 64)
	if err != nil || rev <= 0 {
		return driver.Errorf(driver.CodeCorrupt, "open", "", "log record %q has revision %q", r.ID, v)
	}
	delete(r.Metadata, keyRevision)
	if len(r.Metadata) == 0 {
		r.Metadata = nil
	}
	r.Revision = rev
	c.rev = max(c.rev, rev)
	return nil
}

// encodeRecords is encodeUpsert with each record's revision carried in its
// logged metadata (see keyRevision).
func encodeRecords(recs []driver.Record) []byte { return encodeRecordsDocs(recs, nil) }

// encodeRecordsDocs is encodeRecords of records whose documents are
// docs[i] (in the log's encoding) where their Terms are empty (stored
// records); docs may be nil.
func encodeRecordsDocs(recs []driver.Record, docs [][]byte) []byte {
	logged := make([]driver.Record, len(recs))
	for i := range recs {
		r := recs[i]
		md := make(map[string]string, len(r.Metadata)+1)
		for k, v := range r.Metadata {
			md[k] = v
		}
		md[keyRevision] = strconv.FormatInt(r.Revision, 10)
		r.Metadata = md
		logged[i] = r
	}
	return encodeUpsertDocs(logged, docs)
}

// approxSize is the approximate encoded size of r; its document's share
// is d when r.Terms is empty (docTable.approx of a stored record's).
func approxSize(r *driver.Record, d int) int64 {
	n := len(r.ID) + len(r.Layer) + len(r.Kind) + len(r.Scope.Thread) + len(r.Scope.Resource) + len(r.Text) + 4*len(r.Vector) + 40
	for k, v := range r.Metadata {
		n += len(k) + len(v) + 4
	}
	for k := range r.Terms {
		n += len(k) + 5 // as logged: length, bytes, weight
	}
	if len(r.Terms) == 0 {
		n += d
	}
	return int64(n)
}

func chromemMeta(r *driver.Record) map[string]string {
	m := make(map[string]string, len(r.Metadata)+4)
	for k, v := range r.Metadata {
		m[k] = v
	}
	for k, v := range map[string]string{keyLayer: r.Layer, keyKind: r.Kind, keyThread: r.Scope.Thread, keyResource: r.Scope.Resource} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// applyUpsert installs records in memory, in the indexes and in chromem-go
// (the last three once open has built the indexes); the caller holds mu (or
// owns c exclusively during open). docs, when not nil, holds the records'
// documents (their Terms then nil, as decodeStored leaves them); otherwise
// their Terms are moved into docs. The records are stored where they are,
// in recs, which the caller hands over: one allocation per batch, not one
// per record, and none left behind (garbage among the stored records
// would leave their memory fragmented).
func (c *collection) applyUpsert(ctx context.Context, recs []driver.Record, docs []doc) {
	// The index update: the records stored before this batch that it
	// replaces, and the batch's records, the last one only of an id
	// written twice (seen maps such an id to its place in add).
	var rm, add []*driver.Record
	var gone []*driver.Record // replaced: their documents go once unindexed
	var seen map[string]int
	if c.idx.built() {
		add = make([]*driver.Record, 0, len(recs))
		if len(recs) > 1 {
			seen = make(map[string]int, len(recs))
		}
	}
	for i := range recs {
		r := &recs[i] // stored in place: recs is the collection's from here
		var d doc
		if docs != nil {
			d = docs[i]
		} else {
			d = c.docs.fromTerms(r.Terms)
		}
		r.Terms = nil
		old, replaced := c.recs[r.ID]
		if replaced {
			c.live -= approxSize(old, c.docs.approx(c.docs.get(old)))
			c.moved(ctx, c.vecs.remove(old))
			gone = append(gone, old)
		}
		c.moved(ctx, c.vecs.add(r))
		c.recs[r.ID] = r
		c.docs.put(r, d)
		c.live += approxSize(r, c.docs.approx(d))
		if c.idx.built() {
			if j, dup := seen[r.ID]; dup {
				add[j] = r
			} else {
				if replaced {
					rm = append(rm, old)
				}
				if seen != nil {
					seen[r.ID] = len(add)
				}
				add = append(add, r)
			}
			c.addChromem(ctx, r)
		}
	}
	c.idx.update(rm, add)
	c.terms.update(rm, add)
	for _, r := range gone {
		c.docs.drop(r)
	}
}

// addChromem adds (or replaces) r's document in chromem-go, if the
// collection is cosine and chromem-go has its documents (see chrBuilt);
// the caller holds mu exclusively, or chrMu.
func (c *collection) addChromem(ctx context.Context, r *driver.Record) {
	if c.chr == nil || !c.chrBuilt {
		return
	}
	// chromem keeps the slice itself when it is already unit length (the
	// portable layer normalised it), so the vector is shared, not
	// duplicated. AddDocument only fails on an empty ID or vector, both
	// excluded by validation and replay checks.
	_ = c.chr.AddDocument(ctx, chromemgo.Document{ID: r.ID, Metadata: chromemMeta(r), Embedding: r.Vector})
}

// moved updates chromem-go after vecs repacked a chain: its documents of
// recs still share their old vectors, which would keep the old slabs alive.
// The caller holds mu exclusively.
func (c *collection) moved(ctx context.Context, recs []*driver.Record) {
	for _, r := range recs {
		c.addChromem(ctx, r)
	}
}

// applyDelete removes records from memory, from the indexes and from
// chromem-go; the caller holds mu (or owns c exclusively during open).
func (c *collection) applyDelete(ctx context.Context, ids []string) {
	var gone []string
	var rm []*driver.Record
	for _, id := range ids {
		if old, ok := c.recs[id]; ok {
			c.live -= approxSize(old, c.docs.approx(c.docs.get(old)))
			delete(c.recs, id)
			c.moved(ctx, c.vecs.remove(old))
			gone = append(gone, id)
			rm = append(rm, old)
		}
	}
	c.idx.update(rm, nil)
	c.terms.update(rm, nil)
	for _, r := range rm {
		c.docs.drop(r)
	}
	if c.chr != nil && c.chrBuilt && c.idx.built() && len(gone) > 0 {
		// chromem's Delete reads len(documents) before taking its own lock;
		// the caller's exclusive mu is what makes this race-free.
		_ = c.chr.Delete(ctx, nil, nil, gone...)
	}
}

func (c *collection) Info() driver.Info { return c.info }

// appendFrame writes one frame and fsyncs it; the caller holds wmu. On
// failure the log is rolled back to its previous end so that no partial
// frame sits before later appends.
func (c *collection) appendFrame(frame []byte) error {
	if c.failed != nil {
		return fmt.Errorf("chromem: log unusable after an earlier failure: %w", c.failed)
	}
	if c.dirDirty {
		if err := syncDir(c.dir); err != nil {
			return fmt.Errorf("chromem: append to log: the compacted log's directory entry is not durable yet: %w", err)
		}
		c.dirDirty = false
	}
	_, err := c.log.WriteAt(frame, c.size)
	if err == nil {
		err = c.log.Sync()
	}
	if err != nil {
		if terr := c.log.Truncate(c.size); terr != nil {
			c.failed = errors.Join(err, terr)
		}
		return fmt.Errorf("chromem: append to log: %w", err)
	}
	c.size += int64(len(frame))
	c.ckpt.acked(c.size, frame)
	return nil
}

func (c *collection) Upsert(ctx context.Context, recs []driver.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	owned := make([]driver.Record, len(recs))
	for i := range recs {
		owned[i] = recs[i].Clone()
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.upsertLocked(ctx, owned)
}

// upsertLocked gives recs (owned by the callee from here) their revisions,
// logs and applies them; the caller holds wmu. Revisions are assigned under
// wmu, in log order, so a later write of an id always has the greater one.
// A failed append wastes the revisions it drew, which is harmless: they
// only need to grow.
func (c *collection) upsertLocked(ctx context.Context, recs []driver.Record) error {
	for i := range recs {
		c.rev++
		recs[i].Revision = c.rev
	}
	if err := c.appendFrame(encodeRecords(recs)); err != nil {
		return err
	}
	c.mu.Lock()
	c.applyUpsert(ctx, recs, nil)
	c.mu.Unlock()
	return c.maybeCompact()
}

// storedRevision returns the revision of id, 0 if there is none; the
// caller holds wmu, so it cannot change until the caller's write.
func (c *collection) storedRevision(id string) int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if r, ok := c.recs[id]; ok {
		return r.Revision
	}
	return 0
}

// UpsertIf writes rec if id is at revision expected. The check and the
// write happen under wmu, which every writer holds.
func (c *collection) UpsertIf(ctx context.Context, rec driver.Record, expected int64) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	owned := []driver.Record{rec.Clone()}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if cur := c.storedRevision(rec.ID); cur != expected {
		return 0, driver.Conflict("upsert if", rec.ID, expected, cur)
	}
	if err := c.upsertLocked(ctx, owned); err != nil {
		return 0, err
	}
	return owned[0].Revision, nil
}

// DeleteIf deletes id if it is at revision expected, under wmu.
func (c *collection) DeleteIf(ctx context.Context, id string, expected int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if cur := c.storedRevision(id); cur != expected {
		return driver.Conflict("delete if", id, expected, cur)
	}
	return c.deleteLocked(ctx, []string{id})
}

func (c *collection) Delete(ctx context.Context, ids []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.RLock()
	present := make([]string, 0, len(ids))
	for _, id := range ids {
		if _, ok := c.recs[id]; ok {
			present = append(present, id)
		}
	}
	c.mu.RUnlock()
	return c.deleteLocked(ctx, present)
}

// deleteLocked logs and applies the deletion of ids; the caller holds wmu.
func (c *collection) deleteLocked(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := c.appendFrame(encodeDelete(ids)); err != nil {
		return err
	}
	c.mu.Lock()
	c.applyDelete(ctx, ids)
	c.mu.Unlock()
	return c.maybeCompact()
}

func (c *collection) DeleteWhere(ctx context.Context, f driver.Filter) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	// Writers are serialised by wmu, so the matching set cannot change
	// between this scan and the delete.
	c.mu.RLock()
	var ids []string
	c.scan(&f, func(r *driver.Record) { ids = append(ids, r.ID) })
	c.mu.RUnlock()
	slices.Sort(ids)
	if err := c.deleteLocked(ctx, ids); err != nil {
		return 0, err
	}
	return len(ids), nil
}

// scan calls fn for each record matching f, in no particular order; the
// caller holds mu. It looks at the fewest records it can: those of f.IDs
// when f names ids, else those of the smallest index list among the layer,
// thread and resource f names (see scopeIndex), else all of them. Every
// candidate is then tested with f.Matches, so the result is the same as a
// full scan's.
func (c *collection) scan(f *driver.Filter, fn func(*driver.Record)) {
	if len(f.IDs) > 0 {
		for _, id := range f.IDs {
			if r, ok := c.recs[id]; ok && f.Matches(r) {
				fn(r)
			}
		}
		return
	}
	if cands, _, ok := c.idx.candidates(f); ok {
		for _, r := range cands {
			if f.Matches(r) {
				fn(r)
			}
		}
		return
	}
	for _, r := range c.recs {
		if f.Matches(r) {
			fn(r)
		}
	}
}

func (c *collection) Get(ctx context.Context, id string) (driver.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return driver.Record{}, false, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.recs[id]
	if !ok {
		return driver.Record{}, false, nil
	}
	cp := c.out(r, true)
	cp.Terms = c.docs.terms(c.docs.get(r))
	return cp, true, nil
}

func (c *collection) Count(ctx context.Context, f driver.Filter) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if f.IsZero() {
		return len(c.recs), nil
	}
	if len(f.IDs) == 0 {
		// A filter on one indexed field alone counts its list.
		if cands, fi, ok := c.idx.candidates(&f); ok && onlyField(&f, fi) {
			return len(cands), nil
		}
	}
	n := 0
	c.scan(&f, func(*driver.Record) { n++ })
	return n, nil
}

// out is the copy of the stored record r a read returns: nothing of it
// refers to the collection's memory, not even the text and the vector,
// which may be in the slab file (unmapped at Close; and read with pread,
// which leaves nothing resident).
func (c *collection) out(r *driver.Record, withVector bool) driver.Record {
	cp := *r
	cp.Vector = nil
	cp = cp.Clone()
	cp.Text = c.vecs.file.cloneString(r.Text)
	if withVector {
		cp.Vector = c.vecs.file.cloneFloats(r.Vector)
	}
	return cp
}

// List returns a page in (CreatedAt, ID) order. A filter naming a layer,
// thread or resource (and no ids) pages through the smallest of their index
// lists, which are kept in that order: a binary search for the cursor, then
// a walk that stops at the limit, O(log n + s) for s entries walked (at
// most the scope's size; the limit when the rest of the filter matches
// every entry). Other filters keep the limit's first records of a full
// scan in a bounded heap, O(N log limit) for a collection of N.
func (c *collection) List(ctx context.Context, q driver.ListQuery) ([]driver.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	var hits []*driver.Record
	if cands, _, ok := c.idx.candidates(&q.Filter); ok && len(q.Filter.IDs) == 0 {
		hits = page(cands, &q)
	} else {
		order := func(a, b **driver.Record) int {
			if q.Desc {
				return driver.CompareRecords(*b, *a)
			}
			return driver.CompareRecords(*a, *b)
		}
		h := &bounded[*driver.Record]{k: q.Limit, cmp: order}
		c.scan(&q.Filter, func(r *driver.Record) {
			if q.After == nil || driver.ComesAfter(r, q.After, q.Desc) {
				h.offer(r)
			}
		})
		hits = h.sorted()
	}
	res := make([]driver.Record, len(hits))
	for i, r := range hits {
		res[i] = c.out(r, q.WithVectors)
		res[i].Terms = c.docs.terms(c.docs.get(r))
	}
	return res, nil
}

func (c *collection) Query(ctx context.Context, q driver.VectorQuery) ([]driver.Match, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	var ms []driver.Match
	var err error
	f := &q.Filter
	_, _, indexed := c.idx.candidates(f)
	if c.chr != nil && !indexed && len(f.IDs) == 0 && f.CreatedFrom.IsZero() && f.CreatedBefore.IsZero() && f.ValidAt.IsZero() {
		ms, err = c.queryChromem(ctx, &q)
	} else {
		ms = c.queryScan(&q)
	}
	if err != nil {
		return nil, err
	}
	for i := range ms {
		ms[i].Record.Terms = nil // matches carry no document (driver.Record.Terms)
		ms[i].Record = c.out(&ms[i].Record, q.WithVectors)
	}
	return ms, nil
}

// queryChromem asks chromem-go for the top candidates, pushing the equality
// filters (layer, kind, scope, metadata) down into its where clause.
// chromem-go does not break ties, so the driver widens the request until the
// K-th match scores strictly better than the worst candidate chromem
// returned (then no unseen document can beat or tie it), or until chromem
// has returned every document passing the where clause.
func (c *collection) queryChromem(ctx context.Context, q *driver.VectorQuery) ([]driver.Match, error) {
	c.ensureChromem(ctx)
	total := c.chr.Count()
	if total == 0 {
		return nil, nil
	}
	f := &q.Filter
	where := make(map[string]string, len(f.Metadata)+4)
	for k, v := range f.Metadata {
		where[k] = v
	}
	for k, v := range map[string]string{keyLayer: f.Layer, keyKind: f.Kind, keyThread: f.Thread, keyResource: f.Resource} {
		if v != "" {
			where[k] = v
		}
	}
	if len(where) == 0 {
		where = nil
	}
	// chromem-go errors when asked for more results than the collection
	// holds: clamp.
	n := min(q.K+1, total)
	for {
		res, err := c.chr.QueryEmbedding(ctx, q.Vector, n, where, nil)
		if err != nil {
			return nil, fmt.Errorf("chromem: query: %w", err)
		}
		ms := make([]driver.Match, 0, len(res))
		for i := range res {
			r := c.recs[res[i].ID]
			if r == nil {
				continue
			}
			ms = append(ms, driver.Match{Record: *r, Score: float64(res[i].Similarity)})
		}
		slices.SortFunc(ms, func(a, b driver.Match) int { return driver.CompareMatches(&a, &b) })
		exhausted := len(res) < n || n == total
		if exhausted || len(ms) >= q.K && ms[q.K-1].Score > float64(res[len(res)-1].Similarity) {
			if len(ms) > q.K {
				ms = ms[:q.K]
			}
			return ms, nil
		}
		n = min(2*n, total)
	}
}

// ensureChromem gives chromem-go every stored record, with the vectors
// where vecs put them, unless it has them already; the caller holds mu
// (shared suffices: writers, which hold it exclusively, cannot run).
func (c *collection) ensureChromem(ctx context.Context) {
	c.chrMu.Lock()
	defer c.chrMu.Unlock()
	if c.chrBuilt {
		return
	}
	c.chrBuilt = true
	ctx = context.WithoutCancel(ctx) // every record, even if the query is cancelled
	for _, r := range c.recs {
		c.addChromem(ctx, r)
	}
}

// queryScan scores every matching record itself, in one exact pass. It
// serves dot and Euclidean (chromem-go only knows cosine), the filters
// chromem-go cannot express (ids, creation time, validity): filtering those
// after chromem's search would take repeated, widening chromem passes,
// measured 2-7x slower than this single pass (see BenchmarkQueryTop10),
// and every filter naming a layer, thread or resource: scan then scores
// the records of that scope only, where chromem-go would visit every
// document of the collection (BenchmarkScopeQuery).
//
// The candidates are those of scan, except that a filter naming a
// resource is served from that resource's chain of vectors (vecs,
// chain.topK) when the chain is not much longer than the smallest index
// list: reading the chain's slabs in order (and, for cosine and dot, its
// int8 codes first) beats reading scattered vectors. Each candidate is
// tested with what of the filter its source does not already guarantee;
// a filter on metadata, once K matches are kept, only if the candidate's
// score would enter the top K (topK.consider; BenchmarkQueryResource).
func (c *collection) queryScan(q *driver.VectorQuery) []driver.Match {
	t := topK{h: bounded[scored]{k: q.K, cmp: compareScored}, q: q.Vector, d: c.info.Distance, f: q.Filter}
	f := &q.Filter
	var hits []scored
	cands, fi, indexed := c.idx.candidates(f)
	ch := c.vecs.chain(f.Resource)
	switch {
	case len(f.IDs) > 0:
		t.f.IDs = nil // every candidate is one of them
		buf := make([]float32, c.info.Dimension)
		for _, id := range f.IDs {
			if r, ok := c.recs[id]; ok {
				t.consider(r, c.vecs.file.readFloats(buf, r.Vector))
			}
		}
	case ch != nil && ch.slots() <= chainScanFactor*len(cands):
		t.f.Resource = ""
		hits = ch.topK(&c.vecs, t.d, t.q, q.K, &t.f)
	case indexed && len(cands) <= preadMax:
		clearField(&t.f, fi)
		buf := make([]float32, c.info.Dimension)
		for _, r := range cands {
			t.consider(r, c.vecs.file.readFloats(buf, r.Vector))
		}
	case indexed:
		// Most of a resource's vectors, or more: read them in place.
		clearField(&t.f, fi)
		for _, r := range cands {
			t.consider(r, r.Vector)
		}
	default:
		for _, r := range c.recs {
			t.consider(r, r.Vector)
		}
	}
	if hits == nil {
		hits = t.h.sorted()
	}
	if len(hits) == 0 {
		return nil
	}
	ms := make([]driver.Match, len(hits))
	for i, s := range hits {
		ms[i] = driver.Match{Record: *s.r, Score: s.score}
	}
	return ms
}

// preadMax is the most scattered vectors a query copies out of the slab
// file with pread (slabFile.readFloats) rather than reading them in place:
// a scan of more reads most pages anyway.
const preadMax = 4096

// chainScanFactor: a resource's chain is scanned instead of a smaller
// index list (a thread's, say) when it has at most this many times the
// list's entries, sequential reads being that much cheaper than scattered
// ones.
const chainScanFactor = 3

// clearField drops from f its condition on indexed field fi, which the
// records of fi's index list all satisfy.
func clearField(f *driver.Filter, fi int) {
	switch fi {
	case fieldLayer:
		f.Layer = ""
	case fieldThread:
		f.Thread = ""
	default:
		f.Resource = ""
	}
}

// topK is the state of queryScan: the bounded heap of the best matches so
// far and the filter conditions left to test.
type topK struct {
	h bounded[scored]
	q []float32
	d driver.Distance
	f driver.Filter
}

// consider offers r, whose vector is vec, if it passes t.f. The filter is
// tested first, sparing the scoring of the records it refuses, unless it
// looks up metadata and K matches are kept already: the lookups touch
// memory of their own (the map, its strings), costing more than a score
// that is mostly too low to need them.
func (t *topK) consider(r *driver.Record, vec []float32) {
	if len(t.f.Metadata) == 0 || len(t.h.items) < t.h.k {
		if t.f.Matches(r) {
			t.h.offer(scored{r: r, score: score(t.d, t.q, vec)})
		}
		return
	}
	s := scored{r: r, score: score(t.d, t.q, vec)}
	if t.h.wouldKeep(s) && t.f.Matches(r) {
		t.h.offer(s)
	}
}

// scored is a candidate match of queryScan: the record by pointer, so that
// the heap moves 16 bytes per candidate rather than a whole Record.
type scored struct {
	r     *driver.Record
	score float64
}

// compareScored is driver.CompareMatches on scored: score descending, then
// id.
func compareScored(a, b *scored) int {
	switch {
	case a.score > b.score:
		return -1
	case a.score < b.score:
		return 1
	}
	return strings.Compare(a.r.ID, b.r.ID)
}

// bounded keeps the k first items of an order (cmp < 0 means a comes
// first) in a slice-backed heap whose root is the last kept item: O(n log k)
// instead of sorting everything, for top-k queries and List pages alike.
type bounded[T any] struct {
	k     int
	cmp   func(a, b *T) int
	items []T
	// next holds the offered item while it is compared, so that taking its
	// address does not move every offered value to the heap.
	next T
}

// wouldKeep reports whether offer(x) would keep x: a caller with a costly
// test to make of x (a filter) makes it only then. Like offer, it compares
// through next, so that x does not escape.
func (h *bounded[T]) wouldKeep(x T) bool {
	if len(h.items) < h.k {
		return true
	}
	h.next = x
	return h.after(&h.items[0], &h.next)
}

// after reports whether a comes after b in the order.
func (h *bounded[T]) after(a, b *T) bool { return h.cmp(a, b) > 0 }

func (h *bounded[T]) offer(x T) {
	if len(h.items) < h.k {
		h.items = append(h.items, x)
		for i := len(h.items) - 1; i > 0; {
			p := (i - 1) / 2
			if !h.after(&h.items[i], &h.items[p]) {
				break
			}
			h.items[i], h.items[p] = h.items[p], h.items[i]
			i = p
		}
		return
	}
	h.next = x
	if !h.after(&h.items[0], &h.next) {
		return
	}
	h.items[0] = h.next
	h.down(len(h.items))
}

// down restores the heap order of items[:n] after its root changed.
func (h *bounded[T]) down(n int) {
	for i := 0; ; {
		l, r, w := 2*i+1, 2*i+2, i
		if l < n && h.after(&h.items[l], &h.items[w]) {
			w = l
		}
		if r < n && h.after(&h.items[r], &h.items[w]) {
			w = r
		}
		if w == i {
			return
		}
		h.items[i], h.items[w] = h.items[w], h.items[i]
		i = w
	}
}

// sorted returns the kept items in order, by heapsort in place: the root
// is the item that comes last, so moving it behind the shrinking heap,
// over and over, orders the slice. (slices.SortFunc would need a
// comparator of values, and passing their addresses on to cmp moved every
// compared pair to the heap: two allocations per comparison.)
func (h *bounded[T]) sorted() []T {
	for n := len(h.items) - 1; n > 0; n-- {
		h.items[0], h.items[n] = h.items[n], h.items[0]
		h.down(n)
	}
	return h.items
}

func (c *collection) needsCompaction() bool {
	return c.size > compactMinBytes && c.size > 2*c.live
}

// maybeCompact compacts when the log holds mostly superseded data; the
// caller holds wmu.
func (c *collection) maybeCompact() error {
	c.mu.RLock()
	need := c.needsCompaction()
	c.mu.RUnlock()
	if !need {
		return nil
	}
	// The write that triggered compaction is already durable; a failed
	// compaction leaves a complete log in use (the old one, or the new one
	// when only the directory fsync failed), so it is not the caller's error.
	if c.compactErr = c.compact(); c.compactErr != nil {
		slog.Warn("chromem: compaction failed; the log stays in use", "dir", c.dir, "err", c.compactErr)
	}
	return nil
}

// compact rewrites the log with one upsert per live record, atomically
// (temp file, fsync, rename, fsync dir): a crash leaves either the old or the
// new log, each holding every acknowledged write. The caller holds wmu (or
// owns c during open).
func (c *collection) compact() error {
	c.mu.RLock()
	type withDoc struct {
		r driver.Record
		d []byte // in the log's encoding
	}
	all := make([]withDoc, 0, len(c.recs))
	for _, r := range c.recs {
		all = append(all, withDoc{*r, c.docs.logged(c.docs.get(r))})
	}
	c.mu.RUnlock()
	slices.SortFunc(all, func(a, b withDoc) int { return cmp.Compare(a.r.ID, b.r.ID) })
	recs := make([]driver.Record, len(all))
	docs := make([][]byte, len(all))
	for i := range all {
		recs[i], docs[i] = all[i].r, all[i].d
	}
	all = nil
	// The new log forgets the deleted records and their revisions. When one
	// of those was the highest handed out, record the counter first, so
	// that a reopen never hands it out again. (Usually the last write is
	// live and carries the highest revision itself: no extra fsync.)
	var live int64
	for i := range recs {
		live = max(live, recs[i].Revision)
	}
	if live < c.rev && c.meta.Revision < c.rev {
		m := c.meta
		m.Revision = c.rev
		if err := writeMeta(c.dir, m); err != nil {
			return err // the old log is untouched and stays in use
		}
		c.meta = m
	}
	var size int64
	renamed, err := writeAtomic(c.dir, logFile, func(f *os.File) error {
		var err error
		size, err = writeCompacted(f, recs, docs, encodeRecordsDocs, c.ckpt)
		return err
	})
	// Writing read every vector and text: let their pages go.
	c.mu.RLock()
	c.vecs.file.trim()
	c.mu.RUnlock()
	if !renamed {
		return err // the old log is untouched and stays in use
	}
	// From here the new log is the file on disk and the old one is unlinked:
	// whatever else failed, never write through the old handle again.
	syncErr := err
	nf, err := os.OpenFile(filepath.Join(c.dir, logFile), os.O_RDWR, 0o600)
	if err != nil {
		c.failed = err
		return fmt.Errorf("chromem: reopen compacted log: %w", err)
	}
	old := c.log
	c.log, c.size = nf, size
	c.compacted++
	if old != nil {
		_ = old.Close()
	}
	if syncErr != nil {
		c.dirDirty = true
		return syncErr
	}
	return nil
}

// Close closes the log and releases the directory lock. Every acknowledged
// write is already on disk.
func (c *collection) Close() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.recs = nil
	c.docs, c.terms.docs = nil, nil
	c.idx = scopeIndex{}
	c.vecs.close()
	c.vecs = vecStore{}
	c.terms.reset()
	c.chr = nil
	var err error
	if c.dirDirty {
		// Nothing was acknowledged since; report that the compacted log's
		// directory entry may still not be durable.
		err = syncDir(c.dir)
	}
	if cerr := c.log.Close(); err == nil {
		err = cerr
	}
	if lerr := c.lock.Close(); err == nil {
		err = lerr
	}
	if kerr := c.ckpt.close(); err == nil {
		err = kerr
	}
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// score is driver.Score in float32 arithmetic with the vecmath kernels
// (AVX2+FMA where the CPU has them): several times faster than the float64
// reference, and like it a pure function of the two vectors, whatever
// their addresses, so identical vectors tie exactly.
func score(d driver.Distance, a, b []float32) float64 {
	if d == driver.DistanceEuclidean {
		return -math.Sqrt(float64(vecmath.SqDist(a, b)))
	}
	return float64(vecmath.Dot(a, b))
}
