// Package embedded opens strata's embedded default: everything
// in-process and persisted under one data directory, with no server and no
// network (DESIGN decision 7).
//
//	<dir>/records/   memory records and vectors (chromem collection "memories")
//	<dir>/state/     layer state with revisions (filestore)
//	<dir>/strata.json which embedder the records were embedded with
//
// The embedder is the offline default model (embed/uselite) unless
// Options.Embedder says otherwise; the records remember which one wrote
// them, and reopening with another fails clearly instead of mixing vectors
// (memctl reindex moves a store to another embedder).
package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/uselite"
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
// model than the one given.
var ErrEmbedderMismatch = errors.New("embedded: store was embedded with another model")

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
	meta, err := ReadMeta(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		meta = Meta{Embedder: emb.Model(), Dimension: emb.Dimension()}
		if err := WriteMeta(dir, meta); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	case meta.Embedder != emb.Model() || meta.Dimension != emb.Dimension():
		return nil, fmt.Errorf("%w: %s has %s (%d-d), opened with %s (%d-d); run memctl reindex",
			ErrEmbedderMismatch, dir, meta.Embedder, meta.Dimension, emb.Model(), emb.Dimension())
	}
	col, err := chromem.OpenCollection(ctx, filepath.Join(dir, "records"), Collection, &vectorstore.Options{Dimension: meta.Dimension})
	if err != nil {
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
	raw, err := os.ReadFile(filepath.Join(dir, "strata.json"))
	if err != nil {
		return Meta{}, err
	}
	var m Meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return Meta{}, fmt.Errorf("embedded: %s: %w", filepath.Join(dir, "strata.json"), err)
	}
	return m, nil
}

// WriteMeta writes <dir>/strata.json atomically.
func WriteMeta(dir string, m Meta) error {
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".strata.json.tmp")
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "strata.json")); err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	return nil
}
