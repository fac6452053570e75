// Package embedded opens strata's embedded default: everything
// in-process and persisted under one data directory, with no server and no
// network.
//
//	<dir>/records/   memory records and vectors (chromem collection "memories")
//	<dir>/state/     layer state with revisions (filestore)
//	<dir>/strata.json which embedder the records were embedded with
//	<dir>/strata.lock held (flock) while Open checks strata.json and opens the records
//
// The embedder is the offline default model (embed/uselite) unless
// Options.Embedder says otherwise; the records remember which one wrote
// them, and reopening with another fails clearly instead of mixing vectors
// (memctl reindex moves a store to another embedder): Open returns
// *EmbedderMismatchError, which names both.
//
// Open is the directory case of environment.Open, which opens a server
// environment (postgres://, qdrant://) the same way and, given no
// embedder, uses the one strata.json records.
//
// Open holds a directory-wide lock from reading strata.json until the
// records collection (which keeps its own lock while open) is open, so two
// first opens of one directory with different embedders cannot both write
// strata.json: one creates it and opens the records, the other reads it
// and fails with ErrEmbedderMismatch. strata.json is written to a unique
// temporary file, synced, and then linked into place (a first write, which
// fails if the file exists) or renamed over it (WriteMeta), with the
// directory synced: a crash leaves the old file or the new one, never an
// empty one.
package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/internal/fsutil"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/storage/filestore"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
)

// Collection is the name of the records collection.
const Collection = "memories"

// Options configure Open. The zero value uses the default model.
type Options struct {
	// Embedder embeds memories; nil loads the offline default model
	// (uselite.Default, installed by `make model`).
	Embedder embed.Embedder
}

// Env is an open embedded environment.
type Env struct {
	Dir string
	// Memory is what memory layers take.
	Memory *memory.Store
	// State is the runtime's layer-state store (core.Config.Store).
	State *filestore.Store
}

// Meta is what strata.json records.
type Meta struct {
	Embedder  string `json:"embedder"`
	Dimension int    `json:"dimension"`
}

// ErrEmbedderMismatch is returned when the store was embedded with another
// model than the one given. *EmbedderMismatchError wraps it.
var ErrEmbedderMismatch = errors.New("embedded: store was embedded with another model")

// EmbedderMismatchError is the error of opening a store whose records were
// embedded with another model (or dimension) than the one given: vectors
// of two models are not comparable, so a search would rank noise. It names
// both. errors.Is(err, ErrEmbedderMismatch) matches it. The environment
// package returns it for every backend.
type EmbedderMismatchError struct {
	// Store is the directory, or the URL with its credentials redacted,
	// and the collection.
	Store string
	// Recorded is the embedder recorded with the store; Given the one it
	// was opened with.
	Recorded, Given Meta
}

func (e *EmbedderMismatchError) Error() string {
	return fmt.Sprintf("%v: %s has %s (%d-d), opened with %s (%d-d); run memctl reindex",
		ErrEmbedderMismatch, e.Store, e.Recorded.Embedder, e.Recorded.Dimension, e.Given.Embedder, e.Given.Dimension)
}

// Unwrap lets errors.Is(err, ErrEmbedderMismatch) match.
func (e *EmbedderMismatchError) Unwrap() error { return ErrEmbedderMismatch }

// Open opens (creating if needed) the environment under dir.
func Open(ctx context.Context, dir string, opts Options) (*Env, error) {
	if dir == "" {
		return nil, fmt.Errorf("embedded: empty data directory")
	}
	emb := opts.Embedder
	if emb == nil {
		m, err := uselite.Default()
		if err != nil {
			return nil, err
		}
		emb = m
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	unlock, err := lockDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	want := Meta{Embedder: emb.Model(), Dimension: emb.Dimension()}
	meta, err := ReadMeta(dir)
	if errors.Is(err, os.ErrNotExist) {
		meta, err = want, createMeta(dir, want)
		if errors.Is(err, os.ErrExist) {
			// Created meanwhile by a writer without the lock (an older
			// strata, or a platform without flock): that one stands.
			meta, err = ReadMeta(dir)
		}
	}
	switch {
	case err != nil:
		return nil, err
	case meta != want:
		return nil, &EmbedderMismatchError{Store: dir, Recorded: meta, Given: want}
	}
	col, err := chromem.OpenCollection(ctx, filepath.Join(dir, "records"), Collection, &vectorstore.Options{Dimension: meta.Dimension})
	if err != nil {
		var le *chromem.LockedError
		if errors.As(err, &le) && le.What == "" {
			// What is open elsewhere is the store the caller named.
			le.What, le.Path = "store", dir
		}
		return nil, err
	}
	state, err := filestore.Open(filepath.Join(dir, "state"), filestore.Options{})
	if err != nil {
		_ = col.Close()
		return nil, err
	}
	return &Env{Dir: dir, Memory: &memory.Store{Records: col, Embedder: emb}, State: state}, nil
}

// Close closes the records collection and the state store.
func (e *Env) Close() error {
	return errors.Join(e.Memory.Records.Close(), e.State.Close())
}

// ReadMeta reads <dir>/strata.json.
func ReadMeta(dir string) (Meta, error) {
	raw, err := os.ReadFile(filepath.Join(dir, metaName))
	if err != nil {
		return Meta{}, err
	}
	var m Meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return Meta{}, fmt.Errorf("embedded: %s: %w", filepath.Join(dir, metaName), err)
	}
	return m, nil
}

// metaName is the file Meta is kept in.
const metaName = "strata.json"

// WriteMeta replaces <dir>/strata.json atomically and durably: a unique
// temporary file, synced, renamed into place, and the directory synced.
// A crash leaves the old content or the new, never a torn file.
func WriteMeta(dir string, m Meta) error {
	raw, err := encodeMeta(m)
	if err != nil {
		return err
	}
	if err := fsutil.WriteFile(filepath.Join(dir, metaName), raw, fsutil.Options{}); err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	return nil
}

// createMeta writes <dir>/strata.json only if it does not exist yet (an
// error matching os.ErrExist otherwise), as durably as WriteMeta: the
// complete temporary file is hard-linked into place, which fails when the
// name is taken. Where hard links are not supported it falls back to an
// O_EXCL create.
func createMeta(dir string, m Meta) error {
	raw, err := encodeMeta(m)
	if err != nil {
		return err
	}
	tmp, err := fsutil.WriteTemp(dir, metaName, func(f *os.File) error {
		_, err := f.Write(raw)
		return err
	}, fsutil.Options{})
	if err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	defer os.Remove(tmp)
	final := filepath.Join(dir, metaName)
	lerr := os.Link(tmp, final)
	switch {
	case lerr == nil:
		return syncDir(dir)
	case errors.Is(lerr, os.ErrExist):
		return fmt.Errorf("embedded: %w", lerr)
	}
	f, err := os.OpenFile(final, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	if _, err := f.Write(raw); err != nil {
		f.Close()
		_ = os.Remove(final)
		return fmt.Errorf("embedded: %w", err)
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		_ = os.Remove(final)
		return fmt.Errorf("embedded: %w", err)
	}
	return syncDir(dir)
}

func encodeMeta(m Meta) ([]byte, error) {
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(raw, '\n'), nil
}

// syncDir makes a link in dir durable.
func syncDir(dir string) error {
	if err := fsutil.SyncDir(dir); err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	return nil
}

// lockName is the directory-wide lock file.
const lockName = "strata.lock"

// lockDir takes the directory-wide lock, waiting (with ctx) while another
// Open holds it, records this process as its holder, and returns its
// release. Where flock is unavailable it is a no-op: two processes opening
// one directory at once are then told apart only by the exclusive creation
// of strata.json (and the records collection's own lock, where it has one).
func lockDir(ctx context.Context, dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("embedded: open lock: %w", err)
	}
	// Closing the file releases the flock.
	release := func() { f.Close() }
	err = fsutil.LockWait(ctx, f, time.Millisecond, 50*time.Millisecond)
	switch {
	case err == nil:
		fsutil.WriteHolder(f)
		return release, nil
	case errors.Is(err, errors.ErrUnsupported):
		return release, nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		pid := fsutil.Holder(f)
		f.Close()
		// Another Open of dir holds the lock (it does only while
		// opening): name it, and say what to do.
		return nil, &chromem.LockedError{What: "store", Path: dir, PID: pid, Err: fmt.Errorf("gave up waiting for %s: %w", lockName, err)}
	default:
		f.Close()
		return nil, fmt.Errorf("embedded: lock %s: %w", f.Name(), err)
	}
}
