package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratamem/strata/cmd/memctl/internal/embedspec"
	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/vectorstore"

	// The backends memctl opens by URL.
	_ "github.com/stratamem/strata/vectorstore/chromem"
	_ "github.com/stratamem/strata/vectorstore/pgvector"
	_ "github.com/stratamem/strata/vectorstore/qdrant"
)

// createSpec says how to create a store that does not exist yet (import
// and migrate targets).
type createSpec struct {
	Dim      int
	Distance vectorstore.Distance
	// Embedder is the model id of the vectors to be written ("" unknown).
	Embedder string
	// Spec, when set, is the embedder of the store instead of the
	// configured one (reindex targets).
	Spec *embedspec.Spec
}

// openMode says whether a missing store is an error or is created.
type openMode int

const (
	openRead   openMode = iota // the store must exist
	openCreate                 // created when missing
)

// store is an open memctl store.
type store struct {
	ref  storeRef
	coll *vectorstore.Collection
	env  *embedded.Env // embedded directory stores only

	// emb is the store's embedder: recorded in strata.json for a
	// directory, configured (or the default model) for a URL. It loads
	// nothing until used.
	emb       embed.Embedder
	embID     string // "" when not known (a URL store without --embedder)
	embSource string
	// explicit is the embedder the operator configured, if any.
	explicit *embedspec.Spec
	created  bool
}

// Close closes the store.
func (s *store) Close() error {
	if s == nil {
		return nil
	}
	if s.env != nil {
		return s.env.Close()
	}
	if s.coll != nil {
		return s.coll.Close()
	}
	return nil
}

// Info describes the collection.
func (s *store) Info() vectorstore.Info { return s.coll.Info() }

// reindexDir is where an embedded store's reindex works.
func reindexDir(dir string) string { return filepath.Join(dir, ".reindex") }

// explicitEmbedder parses the configured embedder, if any.
func (a *app) explicitEmbedder() (*embedspec.Spec, string, error) {
	val, src := resolveEmbedderFlag(a.flags.embedder, a.cfg)
	if val == "" {
		return nil, "", nil
	}
	sp, err := embedspec.Parse(val)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", src, err)
	}
	return &sp, src, nil
}

// openStore opens the configured store.
func (a *app) openStore(ctx context.Context, mode openMode, cs *createSpec) (*store, error) {
	ref, err := resolveStore(a.flags.store, a.cfg, a.cfgPath)
	if err != nil {
		return nil, err
	}
	return a.openRef(ctx, ref, mode, cs, false)
}

// openRef opens a store reference. allowPending lets reindex open a
// directory whose reindex was interrupted.
func (a *app) openRef(ctx context.Context, ref storeRef, mode openMode, cs *createSpec, allowPending bool) (*store, error) {
	explicit, src, err := a.explicitEmbedder()
	if err != nil {
		return nil, err
	}
	if cs != nil && cs.Spec != nil {
		explicit, src = cs.Spec, "reindex"
	}
	s := &store{ref: ref, explicit: explicit}
	octx, cancel := context.WithTimeout(ctx, a.flags.timeout)
	defer cancel()
	if ref.Dir != "" {
		return s, a.openDir(octx, s, mode, cs, src, allowPending)
	}
	return s, a.openURL(octx, s, mode, cs, src)
}

func (a *app) openDir(ctx context.Context, s *store, mode openMode, cs *createSpec, src string, allowPending bool) error {
	dir := s.ref.Dir
	if !allowPending {
		if _, err := os.Stat(filepath.Join(reindexDir(dir), reindexStateFile)); err == nil {
			st, _ := readReindexState(dir)
			if st.Phase == phaseSwap {
				return fmt.Errorf("store %s: a reindex was interrupted while switching collections; run memctl reindex %s to finish it", dir, st.Embedder)
			}
		}
	}
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return usageErrorf("store %s is a file, not a directory", dir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("store %s: %w", dir, err)
	}
	meta, err := embedded.ReadMeta(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if mode == openRead {
			return fmt.Errorf("%w at %s (nothing stored yet; set --store, $%s or the config file)", ErrNoStore, dir, EnvStore)
		}
		// A new store: the embedder is the configured one, else the
		// input's, else the default model.
		spec := embedspec.Spec{Kind: embedspec.UseLite}
		s.embSource = "default"
		switch {
		case s.explicit != nil:
			spec, s.embSource = *s.explicit, src
		case cs != nil && cs.Embedder != "":
			sp, err := embedspec.Parse(cs.Embedder)
			if err != nil {
				return fmt.Errorf("the input's embedder %q is not one memctl can load: pass --embedder", cs.Embedder)
			}
			spec, s.embSource = sp, "the input's header"
		case cs != nil && cs.Dim > 0:
			return usageErrorf("the embedder of the input's %d-d vectors is unknown: pass --embedder so %s records it in strata.json", cs.Dim, dir)
		}
		if cs != nil && cs.Embedder != "" && cs.Embedder != spec.ID() {
			return fmt.Errorf("%w: the input was embedded with %s, the store would use %s", embedded.ErrEmbedderMismatch, cs.Embedder, spec.ID())
		}
		if err := checkDistance(cs, dir, embeddedDistance); err != nil {
			return err
		}
		dim := spec.KnownDimension()
		if cs != nil && cs.Dim > 0 {
			if dim != 0 && dim != cs.Dim {
				return fmt.Errorf("%w: the input has %d-d vectors, %s makes %d-d", vectorstore.ErrDimensionMismatch, cs.Dim, spec, dim)
			}
			dim = cs.Dim
		}
		lz := embedspec.NewLazy(spec, dim)
		if dim == 0 {
			if _, err := lz.Resolve(ctx); err != nil {
				return err
			}
		}
		s.emb, s.embID, s.created = lz, spec.ID(), true
	case err != nil:
		return err
	default:
		if cs != nil && cs.Dim > 0 && cs.Dim != meta.Dimension {
			return fmt.Errorf("%w: the input has %d-d vectors, store %s has %d-d (%s); import into a new store, or reindex",
				vectorstore.ErrDimensionMismatch, cs.Dim, dir, meta.Dimension, meta.Embedder)
		}
		if cs != nil && cs.Embedder != "" && cs.Embedder != meta.Embedder {
			return fmt.Errorf("%w: the input was embedded with %s, store %s with %s; import into a new store, or reindex",
				embedded.ErrEmbedderMismatch, cs.Embedder, dir, meta.Embedder)
		}
		if sp, err := embedspec.Parse(meta.Embedder); err == nil {
			s.emb = embedspec.NewLazy(sp, meta.Dimension)
		} else {
			s.emb = &opaqueEmbedder{id: meta.Embedder, dim: meta.Dimension}
		}
		s.embID, s.embSource = meta.Embedder, "recorded in "+filepath.Join(dir, "strata.json")
	}
	env, err := embedded.Open(ctx, dir, embedded.Options{Embedder: s.emb})
	if err != nil {
		return fmt.Errorf("open store %s: %w", dir, err)
	}
	if err := checkDistance(cs, dir, env.Memory.Records.Info().Distance); err != nil {
		_ = env.Close()
		return err
	}
	s.env, s.coll = env, env.Memory.Records
	return nil
}

// embeddedDistance is the distance of the collection embedded.Open
// creates: it takes none, and the collection defaults to cosine.
const embeddedDistance = vectorstore.Cosine

// checkDistance refuses to write vectors compared by one distance into a
// directory store whose collection uses another: a cosine collection
// stores vectors normalised, so a dot-product export imported into it
// would change every vector (and its ranking), silently.
func checkDistance(cs *createSpec, dir string, have vectorstore.Distance) error {
	if cs == nil || cs.Distance == "" || cs.Distance == have {
		return nil
	}
	return fmt.Errorf("%w: the input's vectors use distance %s, store %s uses %s (an embedded directory is created with %s); "+
		"write them to a postgres or qdrant store created with distance=%s, or export with --no-vectors to re-embed them",
		ErrDistance, cs.Distance, dir, have, embeddedDistance, cs.Distance)
}

func (a *app) openURL(ctx context.Context, s *store, mode openMode, cs *createSpec, src string) error {
	spec := embedspec.Spec{Kind: embedspec.UseLite}
	s.embSource = "default (not recorded by this backend)"
	if s.explicit != nil {
		spec, s.embSource = *s.explicit, src
		s.embID = spec.ID()
	}
	opts := &vectorstore.Options{}
	if cs != nil {
		opts.Dimension, opts.Distance = cs.Dim, cs.Distance
		if cs.Embedder != "" {
			if s.explicit != nil && s.explicit.ID() != cs.Embedder {
				return fmt.Errorf("%w: the input was embedded with %s, --embedder says %s", embedded.ErrEmbedderMismatch, cs.Embedder, s.explicit.ID())
			}
			s.embID = cs.Embedder
			if sp, err := embedspec.Parse(cs.Embedder); err == nil && s.explicit == nil {
				spec, s.embSource = sp, "the input's header"
			}
		}
	}
	coll, err := vectorstore.Open(ctx, s.ref.URL, opts)
	if isMissingCollection(err) {
		if mode == openRead {
			return fmt.Errorf("%w: %s has no collection %q yet", ErrNoStore, s.ref, collectionName(s.ref.URL))
		}
		dim := spec.KnownDimension()
		if dim == 0 {
			if dim, err = embedspec.NewLazy(spec, 0).Resolve(ctx); err != nil {
				return err
			}
		}
		opts.Dimension = dim
		coll, err = vectorstore.Open(ctx, s.ref.URL, opts)
		s.created = err == nil
	}
	if err != nil {
		if errors.Is(err, vectorstore.ErrConfigMismatch) && cs != nil {
			if ve := (*vectorstore.Error)(nil); errors.As(err, &ve) && ve.Field == "distance" {
				return fmt.Errorf("%w: %v", ErrDistance, err)
			}
			return fmt.Errorf("%w: %v", vectorstore.ErrDimensionMismatch, err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("store %s unreachable within --timeout %s: %w", s.ref, a.flags.timeout, err)
		}
		var ve *vectorstore.Error
		if errors.As(err, &ve) && ve.Code == vectorstore.CodeInvalidArgument && ve.Field != "" {
			// A bad URL parameter: the operator's to fix.
			return usageErrorf("store %s: %v", s.ref, err)
		}
		return fmt.Errorf("open store %s: %w", s.ref, err)
	}
	s.coll = coll
	s.emb = embedspec.NewLazy(spec, coll.Info().Dimension)
	return nil
}

func isMissingCollection(err error) bool {
	var e *vectorstore.Error
	return errors.As(err, &e) && e.Code == vectorstore.CodeInvalidArgument && e.Field == "dimension" && strings.Contains(e.Msg, "does not exist")
}

func collectionName(raw string) string {
	if i := strings.Index(raw, "collection="); i >= 0 {
		v := raw[i+len("collection="):]
		if j := strings.IndexByte(v, '&'); j >= 0 {
			v = v[:j]
		}
		return v
	}
	return vectorstore.DefaultCollectionName
}

// embedder returns the embedder to embed with, checked against the store:
// a configured embedder that is not the one the store was embedded with
// is refused (vectors of two models must not be mixed).
func (s *store) embedder(ctx context.Context) (embed.Embedder, error) {
	if s.explicit != nil && s.embID != "" && s.explicit.ID() != s.embID {
		return nil, fmt.Errorf("%w: store %s was embedded with %s, memctl is configured with %s; run memctl reindex %s to move it",
			embedded.ErrEmbedderMismatch, s.ref, s.embID, s.explicit.ID(), s.explicit)
	}
	if lz, ok := s.emb.(*embedspec.Lazy); ok {
		if _, err := lz.Load(); err != nil {
			return nil, err
		}
		if d, err := lz.Resolve(ctx); err != nil {
			return nil, err
		} else if d != s.coll.Info().Dimension {
			return nil, fmt.Errorf("%w: embedder %s makes %d-d vectors, the store's are %d-d", vectorstore.ErrDimensionMismatch, lz.Spec(), d, s.coll.Info().Dimension)
		}
	}
	if o, ok := s.emb.(*opaqueEmbedder); ok {
		return nil, o.err()
	}
	return s.emb, nil
}

// memoryStore is what memory layers take.
func (s *store) memoryStore(ctx context.Context) (*memory.Store, error) {
	e, err := s.embedder(ctx)
	if err != nil {
		return nil, err
	}
	return &memory.Store{Records: s.coll, Embedder: e}, nil
}

// opaqueEmbedder stands for a recorded embedder memctl cannot build (a
// custom one): the store opens, nothing can be embedded.
type opaqueEmbedder struct {
	id  string
	dim int
}

func (o *opaqueEmbedder) Model() string  { return o.id }
func (o *opaqueEmbedder) Dimension() int { return o.dim }
func (o *opaqueEmbedder) err() error {
	return fmt.Errorf("the store's embedder %q is not one memctl can load (uselite, hash:DIM, openai:MODEL, ollama:MODEL)", o.id)
}
func (o *opaqueEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, o.err()
}

// defaultModel loads the default model (to know whether it is installed).
func (s *store) defaultModel() (embed.Embedder, error) {
	return embedspec.Spec{Kind: embedspec.UseLite}.New()
}
