package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/environment" // opens every backend memctl takes
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/vectorstore"
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
	Spec *embed.Spec
}

// openMode says whether a missing store is an error or is created.
type openMode int

const (
	openRead   openMode = iota // the store must exist
	openCreate                 // created when missing
	// openReadOnly: the store must exist and is only read, so an embedded
	// directory another process holds is read from a snapshot (see
	// snapshot.go).
	openReadOnly
)

// store is an open memctl store.
type store struct {
	ref  storeRef
	coll *vectorstore.Collection
	env  *embedded.Env // embedded directory stores only
	envx *environment.Env

	// emb is the store's embedder: recorded in strata.json for a
	// directory, configured (or the default model) for a URL. It loads
	// nothing until used.
	emb       embed.Embedder
	embID     string // "" when not known (a URL store without --embedder)
	embSource string
	// explicit is the embedder the operator configured, if any.
	explicit *embed.Spec
	created  bool
	// snapshot says the records are a snapshot of a directory another
	// process holds; cleanup removes it.
	snapshot bool
	cleanup  func()
}

// Close closes the store.
func (s *store) Close() error {
	if s == nil {
		return nil
	}
	err := s.envx.Close()
	if s.cleanup != nil {
		s.cleanup()
		s.cleanup = nil
	}
	return err
}

// Info describes the collection.
func (s *store) Info() vectorstore.Info { return s.coll.Info() }

// reindexDir is where an embedded store's reindex works.
func reindexDir(dir string) string { return filepath.Join(dir, ".reindex") }

// explicitEmbedder parses the configured embedder, if any.
func (a *app) explicitEmbedder() (*embed.Spec, string, error) {
	val, src := resolveEmbedderFlag(a.flags.embedder, a.cfg)
	if val == "" {
		return nil, "", nil
	}
	sp, err := embed.ParseSpec(val)
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

// openRecord opens the configured store to read and reads the record
// with this id from it: a not-found error naming the store when it holds
// none. The caller closes the store.
func (a *app) openRecord(ctx context.Context, id string, mode openMode) (*store, vectorstore.Record, error) {
	s, err := a.openStore(ctx, mode, nil)
	if err != nil {
		return nil, vectorstore.Record{}, err
	}
	r, err := s.coll.Get(ctx, id)
	if errors.Is(err, vectorstore.ErrNotFound) {
		err = notFoundf("no memory with id %q in %s", id, s.ref)
	}
	if err != nil {
		_ = s.Close()
		return nil, vectorstore.Record{}, err
	}
	return s, r, nil
}

// openRef opens a store reference through environment.Open. allowPending
// lets reindex open a directory whose reindex was interrupted.
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
	target, opts := ref.URL, environment.Options{MustExist: mode != openCreate, NoState: ref.Dir == "", Resolve: s.resolve,
		NewEmbedder: func(ctx context.Context, dim int) (embed.Embedder, error) { return s.newEmbedder(ctx, cs, src, dim) }}
	if ref.Dir != "" {
		if target = ref.Dir; !allowPending {
			if st, err := readReindexState(ref.Dir); err == nil && st.Phase == phaseSwap {
				return s, fmt.Errorf("store %s: a reindex was interrupted while switching collections; run memctl reindex %s to finish it", ref.Dir, st.Embedder)
			}
		}
		if fi, err := os.Stat(ref.Dir); err == nil && !fi.IsDir() {
			return s, usageErrorf("store %s is a file, not a directory", ref.Dir)
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return s, fmt.Errorf("store %s: %w", ref.Dir, err)
		}
		if err := checkDistance(cs, ref.Dir, embeddedDistance); err != nil {
			return s, err
		}
	} else if cs != nil {
		opts.Dimension, opts.Distance = cs.Dim, cs.Distance
	}
	env, err := environment.Open(octx, target, opts)
	if le, locked := asLocked(err); locked && ref.Dir != "" {
		if mode != openReadOnly {
			return s, lockedError(ref.Dir, le)
		}
		var serr error
		if env, s.cleanup, serr = openSnapshot(octx, ref.Dir, opts); serr != nil {
			return s, fmt.Errorf("%w (and reading a snapshot of it failed: %v)", lockedError(ref.Dir, le), serr)
		}
		s.snapshot = true
		// What is recorded is the live directory's, not the copy's.
		env.RecordedIn = filepath.Join(ref.Dir, "strata.json")
		fmt.Fprintf(a.io.Err, "memctl: store %s is open in %s: reading a snapshot of it taken now\n", esc(ref.Dir), esc(lockedError(ref.Dir, le).Holder))
		err = nil
	}
	if err != nil {
		return s, a.openError(s, err)
	}
	s.emb, s.coll, s.created = env.Memory.Embedder, env.Records(), env.Created
	if env.Recorded.Embedder != "" && !s.created {
		s.embSource = "recorded in " + env.RecordedIn
	}
	info := s.coll.Info()
	switch {
	case cs != nil && cs.Dim > 0 && cs.Dim != info.Dimension:
		err = fmt.Errorf("%w: the input has %d-d vectors, store %s has %d-d (%s); import into a new store, or reindex",
			vectorstore.ErrDimensionMismatch, cs.Dim, s.ref, info.Dimension, s.emb.Model())
	case cs != nil && cs.Embedder != "" && s.embID != "" && cs.Embedder != s.embID:
		err = fmt.Errorf("%w: the input was embedded with %s, store %s with %s; import into a new store, or reindex",
			embedded.ErrEmbedderMismatch, cs.Embedder, s.ref, s.embID)
	case ref.Dir != "":
		err = checkDistance(cs, ref.Dir, info.Distance)
	}
	if err != nil {
		_ = env.Close()
		if s.cleanup != nil {
			s.cleanup()
		}
		return s, err
	}
	s.envx, s.env = env, env.Embedded
	return s, nil
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

// openError words a failed environment.Open for the operator.
func (a *app) openError(s *store, err error) error {
	var ve *vectorstore.Error
	switch {
	case errors.Is(err, environment.ErrNotExist) && s.ref.Dir != "":
		return fmt.Errorf("%w at %s (nothing stored yet; set --store, $%s or the config file)", ErrNoStore, s.ref.Dir, EnvStore)
	case errors.Is(err, environment.ErrNotExist):
		return fmt.Errorf("%w: %s has no collection %q yet", ErrNoStore, s.ref, environment.CollectionName(s.ref.URL))
	case s.ref.Dir != "":
		return fmt.Errorf("open store %s: %w", s.ref.Dir, err)
	case errors.Is(err, vectorstore.ErrConfigMismatch) && errors.As(err, &ve) && ve.Field == "distance":
		return fmt.Errorf("%w: %v", ErrDistance, err)
	case errors.Is(err, vectorstore.ErrConfigMismatch):
		return fmt.Errorf("%w: %v", vectorstore.ErrDimensionMismatch, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("store %s unreachable within --timeout %s: %w", s.ref, a.flags.timeout, err)
	case errors.As(err, &ve) && ve.Code == vectorstore.CodeInvalidArgument && ve.Field != "":
		return usageErrorf("store %s: %v", s.ref, err) // a bad URL parameter: the operator's to fix
	}
	return fmt.Errorf("open store %s: %w", s.ref, err)
}

// resolve builds the embedder recorded with the store (lazily: nothing is
// loaded until something is embedded).
func (s *store) resolve(_ context.Context, rec environment.Record) (embed.Embedder, error) {
	s.embID = rec.Embedder
	if sp, err := embed.ParseSpec(rec.Embedder); err == nil {
		return embed.NewLazy(sp, rec.Dimension, nil), nil
	}
	return &opaqueEmbedder{id: rec.Embedder, dim: rec.Dimension}, nil
}

// newEmbedder is the embedder of a store with none recorded: of a new one
// (dim 0) the configured embedder, else the input's, else the default
// model; of an existing server collection written by older strata (dim its
// dimension) the configured one, else the input's, else the default.
func (s *store) newEmbedder(ctx context.Context, cs *createSpec, src string, dim int) (embed.Embedder, error) {
	spec := embed.Spec{Kind: embed.KindUseLite}
	s.embSource = "default"
	if dim > 0 {
		s.embSource = "default (not recorded with the collection)"
		switch sp, err := embed.ParseSpec(cs.embedder()); {
		case s.explicit != nil:
			spec, s.embSource, s.embID = *s.explicit, src, s.explicit.ID()
		case err == nil:
			spec, s.embSource, s.embID = sp, "the input's header", cs.Embedder
		}
		return embed.NewLazy(spec, dim, nil), nil
	}
	switch {
	case s.explicit != nil:
		spec, s.embSource = *s.explicit, src
	case cs.embedder() != "":
		sp, err := embed.ParseSpec(cs.Embedder)
		if err != nil {
			return nil, fmt.Errorf("the input's embedder %q is not one memctl can load: pass --embedder", cs.Embedder)
		}
		spec, s.embSource = sp, "the input's header"
	case cs != nil && cs.Dim > 0:
		return nil, usageErrorf("the embedder of the input's %d-d vectors is unknown: pass --embedder so %s records it", cs.Dim, s.ref)
	}
	if e := cs.embedder(); e != "" && e != spec.ID() {
		return nil, fmt.Errorf("%w: the input was embedded with %s, the store would use %s", embedded.ErrEmbedderMismatch, e, spec.ID())
	}
	dim = spec.KnownDimension()
	if cs != nil && cs.Dim > 0 {
		if dim != 0 && dim != cs.Dim {
			return nil, fmt.Errorf("%w: the input has %d-d vectors, %s makes %d-d", vectorstore.ErrDimensionMismatch, cs.Dim, spec, dim)
		}
		dim = cs.Dim
	}
	lz := embed.NewLazy(spec, dim, nil)
	if _, err := lz.Resolve(ctx); err != nil {
		return nil, err
	}
	s.embID = spec.ID()
	return lz, nil
}

// embedder is the input's embedder, "" when none is known.
func (cs *createSpec) embedder() string {
	if cs == nil {
		return ""
	}
	return cs.Embedder
}

// embedder returns the embedder to embed with, checked against the store:
// a configured embedder that is not the one the store was embedded with
// is refused (vectors of two models must not be mixed). A configured
// embedder that checks out is recorded with a server collection written
// by older strata, which recorded none.
func (s *store) embedder(ctx context.Context) (_ embed.Embedder, err error) {
	if s.explicit != nil && s.embID != "" && s.explicit.ID() != s.embID {
		return nil, fmt.Errorf("%w: store %s was embedded with %s (dimension %d), memctl is configured with %s; run memctl reindex %s to move it",
			embedded.ErrEmbedderMismatch, s.ref, s.embID, s.coll.Info().Dimension, s.explicit.ID(), s.explicit)
	}
	defer func() {
		if err == nil && s.explicit != nil && s.envx != nil && s.envx.Recorded.Embedder == "" {
			_ = s.envx.Record(ctx, s.emb) // best effort: the store works unrecorded
		}
	}()
	if lz, ok := s.emb.(*embed.Lazy); ok {
		if _, err := lz.Load(ctx); err != nil {
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
	return embed.Spec{Kind: embed.KindUseLite}.Open(context.Background(), nil)
}
