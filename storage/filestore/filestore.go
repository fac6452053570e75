package filestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stratamem/strata/internal/fsutil"
	"github.com/stratamem/strata/storage"
)

// Options configures a Store. The zero value is durable.
type Options struct {
	// NoSync skips fsync of files and of the directory. Writes still
	// survive a crash of the process but not of the machine. Meant for
	// tests and throwaway data.
	NoSync bool
}

// Store is a storage.Store over a directory. It is safe for concurrent use
// by many goroutines, and several processes may open the same directory.
type Store struct {
	dir     string
	dataDir string
	lockDir string
	noSync  bool
	// sem queues this process's writers per stripe before they take the
	// stripe's flock. Each write opens the lock file anew, so flock alone
	// would exclude them too, but by polling; the semaphore lets them wait
	// without spinning and honours their contexts.
	sem    [numStripes]chan struct{}
	closed atomic.Bool
}

var (
	_ storage.Store       = (*Store)(nil)
	_ storage.Lister      = (*Store)(nil)
	_ storage.ScopeLister = (*Store)(nil)
)

const (
	formatFile = "FORMAT"
	formatLine = "strata-filestore 1\n"
	dirPerm    = 0o700 // layer state may hold user data
	filePerm   = 0o600
)

// Open opens the store in dir, creating the directory if needed, and
// removes temporary files left by crashed writers.
func Open(dir string, opts Options) (*Store, error) {
	if dir == "" {
		return nil, errors.New("filestore: empty directory path")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	s := &Store{
		dir:     abs,
		dataDir: filepath.Join(abs, "data"),
		lockDir: filepath.Join(abs, "locks"),
		noSync:  opts.NoSync,
	}
	for i := range s.sem {
		s.sem[i] = make(chan struct{}, 1)
	}
	if err := s.initDir(); err != nil {
		return nil, err
	}
	if err := s.removeTemps(); err != nil {
		return nil, err
	}
	return s, nil
}

// Dir returns the store's directory as an absolute path.
func (s *Store) Dir() string { return s.dir }

func (s *Store) initDir() error {
	for _, d := range []string{s.dir, s.dataDir, s.lockDir} {
		if err := os.MkdirAll(d, dirPerm); err != nil {
			return fmt.Errorf("filestore: %w", err)
		}
	}
	formatPath := filepath.Join(s.dir, formatFile)
	b, err := os.ReadFile(formatPath)
	switch {
	case err == nil:
		if string(b) != formatLine {
			return fmt.Errorf("%w: %s contains %q, want %q", ErrFormat, formatPath, b, formatLine)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("filestore: %w", err)
	}
	// A fresh directory. Two processes may get here at once; both write
	// the same bytes through a rename, so either outcome is the same file.
	if err := s.writeAtomic(s.dir, formatFile, []byte(formatLine)); err != nil {
		return err
	}
	if !s.noSync {
		// Make the new subdirectories themselves durable.
		if err := fsutil.SyncDir(filepath.Dir(s.dir)); err != nil {
			return fmt.Errorf("filestore: %w", err)
		}
	}
	return nil
}

// removeTemps deletes temporary files whose stripe no writer holds: a held
// stripe may belong to a live writer in another process about to rename
// its file, and readers ignore temporary files anyway.
func (s *Store) removeTemps() error {
	entries, err := os.ReadDir(s.dataDir)
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, tmpSuffix) {
			continue
		}
		// Temporary names are "<data name>.<random>.tmp".
		base := strings.TrimSuffix(name, tmpSuffix)
		if i := strings.LastIndexByte(base, '.'); i > 0 {
			base = base[:i]
		}
		unlock, ok, err := s.tryLockStripe(stripeOf(base))
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		err = os.Remove(filepath.Join(s.dataDir, name))
		unlock()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("filestore: removing leftover temporary file: %w", err)
		}
	}
	return nil
}

func (s *Store) check(ctx context.Context, key storage.Key) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return storage.ErrClosed
	}
	return key.Validate()
}

// read returns the record stored under name, or ok=false if there is none.
func (s *Store) read(key storage.Key, name string) (rec record, ok bool, err error) {
	path := filepath.Join(s.dataDir, name)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, fmt.Errorf("filestore: reading %s: %w", key, err)
	}
	rec, err = decodeRecord(path, b)
	if err != nil {
		return record{}, false, err
	}
	if rec.key != key {
		return record{}, false, &CorruptError{Path: path, Reason: fmt.Sprintf("holds key %s, not %s", rec.key, key)}
	}
	return rec, true, nil
}

// Get returns the entry at key, or storage.ErrNotFound.
func (s *Store) Get(ctx context.Context, key storage.Key) (storage.Entry, error) {
	if err := s.check(ctx, key); err != nil {
		return storage.Entry{}, err
	}
	rec, ok, err := s.read(key, fileName(key))
	if err != nil {
		return storage.Entry{}, err
	}
	if !ok || rec.deleted {
		return storage.Entry{}, storage.ErrNotFound
	}
	// rec.value aliases a buffer nobody else holds: no copy needed.
	return storage.Entry{Value: rec.value, Revision: rec.revision}, nil
}

// Put writes value at key if the stored revision equals expected and
// returns the new revision once the write is durable.
func (s *Store) Put(ctx context.Context, key storage.Key, value []byte, expected int64) (int64, error) {
	if err := s.check(ctx, key); err != nil {
		return 0, err
	}
	if uint64(len(value)) > 1<<32-1 {
		return 0, fmt.Errorf("filestore: value of %d bytes exceeds the 4 GiB limit", len(value))
	}
	name := fileName(key)
	var rev int64
	err := s.locked(ctx, name, func() error {
		cur, ok, err := s.read(key, name)
		if err != nil {
			return err
		}
		if live := liveRevision(cur, ok); live != expected {
			return &storage.ConflictError{Key: key, Expected: expected, Actual: live}
		}
		// A tombstone keeps the deleted revision, so this continues above it.
		rev = cur.revision + 1
		// encode copies value, so the caller may reuse its slice at once.
		rec := record{key: key, revision: rev, value: value}
		return s.writeAtomic(s.dataDir, name, rec.encode())
	})
	if err != nil {
		return 0, err
	}
	return rev, nil
}

// Delete removes key if its revision equals expected, leaving a tombstone.
func (s *Store) Delete(ctx context.Context, key storage.Key, expected int64) error {
	if err := s.check(ctx, key); err != nil {
		return err
	}
	name := fileName(key)
	return s.locked(ctx, name, func() error {
		cur, ok, err := s.read(key, name)
		if err != nil {
			return err
		}
		live := liveRevision(cur, ok)
		if live != expected {
			return &storage.ConflictError{Key: key, Expected: expected, Actual: live}
		}
		if live == 0 {
			return nil // already absent
		}
		rec := record{key: key, revision: cur.revision, deleted: true}
		return s.writeAtomic(s.dataDir, name, rec.encode())
	})
}

// Keys returns the keys of one scope that hold a value, ordered by
// storage.CompareKeys. It reads the data directory: a readable file name
// starts with the escaped scope and scope id, so only those files and the
// hashed ones ("h-...", whose key is known only from their content) are
// opened, and of each only the header and key are read. Tombstones and
// temporary files are skipped. A damaged data file that may belong to the
// scope yields a *CorruptError.
func (s *Store) Keys(ctx context.Context, scope, scopeID string) ([]storage.Key, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, storage.ErrClosed
	}
	if err := storage.ValidateScope(scope, scopeID); err != nil {
		return nil, err
	}
	var pb strings.Builder
	escapePart(&pb, scope)
	pb.WriteByte('.')
	escapePart(&pb, scopeID)
	pb.WriteByte('.')
	keys := []storage.Key{}
	err := s.scan(ctx, pb.String(), func(k storage.Key) bool {
		return k.Scope == scope && k.ScopeID == scopeID
	}, func(k storage.Key) { keys = append(keys, k) })
	if err != nil {
		return nil, err
	}
	slices.SortFunc(keys, storage.CompareKeys)
	return keys, nil
}

// ScopeIDs returns the scope ids of scope that start with prefix and hold
// a value, sorted byte by byte. It reads the data directory as Keys does:
// escaping works byte by byte, so the readable names of those scope ids are
// the ones that start with the escaped scope and prefix; they and the
// hashed files are opened, header and key only.
func (s *Store) ScopeIDs(ctx context.Context, scope, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, storage.ErrClosed
	}
	if err := storage.ValidateScopeName(scope); err != nil {
		return nil, err
	}
	var pb strings.Builder
	escapePart(&pb, scope)
	pb.WriteByte('.')
	escapePart(&pb, prefix)
	seen := map[string]bool{}
	ids := []string{}
	err := s.scan(ctx, pb.String(), func(k storage.Key) bool {
		return k.Scope == scope && strings.HasPrefix(k.ScopeID, prefix)
	}, func(k storage.Key) {
		if !seen[k.ScopeID] {
			seen[k.ScopeID] = true
			ids = append(ids, k.ScopeID)
		}
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	return ids, nil
}

// scan calls visit with the key of every live data file whose key is
// selected by in: the keys of the files whose readable name starts with
// namePrefix, the escaped form of what in selects, and of the hashed
// files. A file that claims such a name and holds another key, or holds a
// selected key under a name Get would not read, yields a *CorruptError.
func (s *Store) scan(ctx context.Context, namePrefix string, in func(storage.Key) bool, visit func(storage.Key)) error {
	entries, err := os.ReadDir(s.dataDir)
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	for i, e := range entries {
		if i%256 == 255 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		name := e.Name()
		// Temporary files end in ".tmp", so this skips them too.
		if !strings.HasSuffix(name, dataSuffix) || !e.Type().IsRegular() {
			continue
		}
		if !strings.HasPrefix(name, namePrefix) && !strings.HasPrefix(name, hashPrefix) {
			continue
		}
		path := filepath.Join(s.dataDir, name)
		key, deleted, ok, err := readKey(path)
		if err != nil {
			return err
		}
		if !ok {
			continue // replaced by a rename between ReadDir and open
		}
		selected := in(key)
		if want := fileName(key); want != name && (selected || !strings.HasPrefix(name, hashPrefix)) {
			// A misplaced file: Get of its key reads another file, and a
			// readable name of this scope claims a key it does not hold.
			// Either way the listing could not be trusted.
			return &CorruptError{Path: path, Reason: fmt.Sprintf("holds key %s, which belongs in %s", key, want)}
		}
		if selected && !deleted {
			visit(key)
		}
	}
	return nil
}

// liveRevision is the revision compare-and-swap sees: 0 when absent or deleted.
func liveRevision(r record, ok bool) int64 {
	if !ok || r.deleted {
		return 0
	}
	return r.revision
}

// Close marks the store closed; later calls return storage.ErrClosed.
// Writes already in progress complete. The store holds no open files
// between calls, so there is nothing else to release.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return storage.ErrClosed
	}
	return nil
}

// locked runs fn holding the stripe of name in this process and, through
// flock, across processes.
func (s *Store) locked(ctx context.Context, name string, fn func() error) error {
	stripe := stripeOf(name)
	select {
	case s.sem[stripe] <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.sem[stripe] }()

	f, err := s.openLock(stripe)
	if err != nil {
		return err
	}
	defer f.Close() // closing the file releases the flock

	// Poll with a short backoff: the holder is another process inside one
	// short write. Off Unix (no flock) writes fail rather than run without
	// cross-process exclusion.
	if err := fsutil.LockWait(ctx, f, 50*time.Microsecond, 5*time.Millisecond); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return err
		}
		return fmt.Errorf("filestore: locking %s: %w", f.Name(), err)
	}
	// The store may have been closed while this writer waited.
	if s.closed.Load() {
		return storage.ErrClosed
	}
	return fn()
}

// tryLockStripe takes a stripe without waiting, for housekeeping.
func (s *Store) tryLockStripe(stripe int) (unlock func(), ok bool, err error) {
	select {
	case s.sem[stripe] <- struct{}{}:
	default:
		return nil, false, nil
	}
	f, err := s.openLock(stripe)
	if err != nil {
		<-s.sem[stripe]
		return nil, false, err
	}
	ok, err = fsutil.TryLock(f)
	if err != nil || !ok {
		f.Close()
		<-s.sem[stripe]
		if err != nil {
			err = fmt.Errorf("filestore: locking %s: %w", f.Name(), err)
		}
		return nil, false, err
	}
	return func() { f.Close(); <-s.sem[stripe] }, true, nil
}

func (s *Store) openLock(stripe int) (*os.File, error) {
	path := filepath.Join(s.lockDir, strconv.Itoa(stripe)+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, filePerm)
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	return f, nil
}

// writeAtomic replaces dir/name with content: write a temporary file in the
// same directory, fsync it, rename it over name, fsync the directory. An
// error after the rename (the directory sync) puts only the write's
// durability in doubt.
func (s *Store) writeAtomic(dir, name string, content []byte) error {
	err := fsutil.WriteFile(filepath.Join(dir, name), content, fsutil.Options{Temp: name + ".*" + tmpSuffix, NoSync: s.noSync})
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	return nil
}
