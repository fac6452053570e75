package embed

import (
	"context"
	"fmt"
	"sync"
)

// Lazy is an Embedder that knows its model id and dimension before the
// model is loaded, and loads it (Spec.Open) on the first Embed. It lets a
// program open a store whose records were embedded with a large model, for
// work that never embeds (listing, deleting, exporting), at no cost.
type Lazy struct {
	spec Spec
	opts Options
	dim  int

	once sync.Once
	e    Embedder
	err  error
}

var _ Embedder = (*Lazy)(nil)

// NewLazy returns a lazy embedder for spec with dimension dim (0: the
// spec.KnownDimension(), else learnt by loading, see Resolve). opts are
// passed to Spec.Open; they may be nil.
func NewLazy(spec Spec, dim int, opts *Options) *Lazy {
	if dim == 0 {
		dim = spec.KnownDimension()
	}
	l := &Lazy{spec: spec, dim: dim}
	if opts != nil {
		l.opts = *opts
	}
	return l
}

// Spec returns the specification.
func (l *Lazy) Spec() Spec { return l.spec }

// Model implements Embedder.
func (l *Lazy) Model() string { return l.spec.ID() }

// Dimension implements Embedder: the declared dimension, or the loaded
// model's when none was declared.
func (l *Lazy) Dimension() int {
	if l.dim > 0 {
		return l.dim
	}
	if l.e != nil {
		return l.e.Dimension()
	}
	return 0
}

// Loaded reports whether the model has been loaded.
func (l *Lazy) Loaded() bool { return l.e != nil }

// Load loads the model if needed and checks it against the declared id
// and dimension (ErrMismatch).
func (l *Lazy) Load(ctx context.Context) (Embedder, error) {
	l.once.Do(func() {
		o := l.opts
		o.Dimension = l.dim
		l.e, l.err = l.spec.Open(ctx, &o)
	})
	return l.e, l.err
}

// Resolve makes the dimension known: it loads the model and, for a remote
// model that only learns its dimension from an answer, embeds one probe
// text.
func (l *Lazy) Resolve(ctx context.Context) (int, error) {
	if l.dim > 0 {
		return l.dim, nil
	}
	e, err := l.Load(ctx)
	if err != nil {
		return 0, err
	}
	if d := e.Dimension(); d > 0 {
		l.dim = d
		return d, nil
	}
	vs, err := e.Embed(ctx, []string{"dimension probe"})
	if err != nil {
		return 0, err
	}
	if len(vs) != 1 || len(vs[0]) == 0 {
		return 0, fmt.Errorf("%w: %s returned no vector for a probe", ErrBadResponse, l.spec)
	}
	l.dim = len(vs[0])
	return l.dim, nil
}

// Embed implements Embedder, loading the model on first use. Every vector
// must have the declared dimension (ErrDimensionMismatch).
func (l *Lazy) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e, err := l.Load(ctx)
	if err != nil {
		return nil, err
	}
	vs, err := e.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	for i, v := range vs {
		if l.dim > 0 && len(v) != l.dim {
			return nil, fmt.Errorf("%w: %s returned %d values for text %d, want %d", ErrDimensionMismatch, l.spec, len(v), i, l.dim)
		}
	}
	return vs, nil
}
