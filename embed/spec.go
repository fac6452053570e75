package embed

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Kinds of embedder a specification names (Spec.Kind).
const (
	KindUseLite = "uselite" // embed/uselite, the offline default model
	KindHash    = "hash"    // embed/hashing
	KindOpenAI  = "openai"  // embed/openai
	KindOllama  = "ollama"  // embed/ollama
)

// DefaultModelID is the model id of the default model, embed/uselite's
// (uselite.ModelID).
const DefaultModelID = "use-lite-en@0.2.0"

// MaxSpecDimension bounds the dimension a specification gives (hash:DIM,
// ?dimensions=N); the vector stores accept up to 65536.
const MaxSpecDimension = 65536

var (
	// ErrInvalidSpec is wrapped by ParseSpec and Open for a specification
	// they cannot read.
	ErrInvalidSpec = errors.New("invalid embedder")
	// ErrMismatch is wrapped when an embedder does not produce what it was
	// declared to: another model id or dimension.
	ErrMismatch = errors.New("embedder mismatch")
	// ErrNotRegistered is wrapped by Open for a kind whose package is not
	// linked in (see Register).
	ErrNotRegistered = errors.New("embed: embedder kind not registered")
)

// Spec is a parsed embedder specification (see ParseSpec).
type Spec struct {
	// Kind is KindUseLite, KindHash, KindOpenAI or KindOllama.
	Kind string
	// Model is the remote model name (openai, ollama).
	Model string
	// Dim is the hashing dimension, or the requested dimensions of a
	// remote model (0: as the model answers).
	Dim int
}

// ParseSpec reads an embedder specification, in the grammar of the
// package documentation: a flag form ("uselite", "hash:512",
// "openai:MODEL?dimensions=N", "ollama:MODEL") or a model id an embedder
// reports and a store records ("use-lite-en@0.2.0", "hash-512",
// "openai:text-embedding-3-small?dimensions=256"). Errors wrap
// ErrInvalidSpec.
func ParseSpec(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	bad := func(format string, args ...any) (Spec, error) {
		return Spec{}, fmt.Errorf("%w %q: "+format, append([]any{ErrInvalidSpec, s}, args...)...)
	}
	switch {
	case s == "":
		return bad("empty (want uselite, hash:DIM, openai:MODEL or ollama:MODEL)")
	case s == KindUseLite || s == DefaultModelID || s == "default":
		return Spec{Kind: KindUseLite}, nil
	case strings.HasPrefix(s, "hash:") || strings.HasPrefix(s, "hash-"):
		n, err := strconv.Atoi(s[len("hash:"):])
		if err != nil || n < 1 || n > MaxSpecDimension {
			return bad("the dimension must be an integer in 1..%d", MaxSpecDimension)
		}
		return Spec{Kind: KindHash, Dim: n}, nil
	}
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || (kind != KindOpenAI && kind != KindOllama) {
		return bad("want uselite, hash:DIM, openai:MODEL or ollama:MODEL")
	}
	model, query, _ := strings.Cut(rest, "?")
	if strings.TrimSpace(model) == "" {
		return bad("no model name after %q", kind+":")
	}
	sp := Spec{Kind: kind, Model: model}
	if query != "" {
		q, err := url.ParseQuery(query)
		if err != nil {
			return bad("cannot parse %q", query)
		}
		for k := range q {
			if k != "dimensions" {
				return bad("unknown parameter %q (known: dimensions)", k)
			}
		}
		n, err := strconv.Atoi(q.Get("dimensions"))
		if err != nil || n < 1 || n > MaxSpecDimension {
			return bad("dimensions must be an integer in 1..%d", MaxSpecDimension)
		}
		sp.Dim = n
	}
	return sp, nil
}

// ID is the model id the embedder reports (Embedder.Model), the identity
// of its vector space: what a store records.
func (s Spec) ID() string {
	switch s.Kind {
	case KindUseLite:
		return DefaultModelID
	case KindHash:
		return "hash-" + strconv.Itoa(s.Dim)
	}
	id := s.Kind + ":" + s.Model
	if s.Dim > 0 {
		id += "?dimensions=" + strconv.Itoa(s.Dim)
	}
	return id
}

// String is the flag form of s ("uselite", "hash:64", "openai:MODEL").
func (s Spec) String() string {
	switch s.Kind {
	case KindUseLite:
		return KindUseLite
	case KindHash:
		return KindHash + ":" + strconv.Itoa(s.Dim)
	}
	return s.ID()
}

// KnownDimension is the dimension s declares without loading anything: the
// hashing dimension or the requested dimensions of a remote model; 0 when
// only the model knows (the default model, a remote model without
// dimensions).
func (s Spec) KnownDimension() int {
	if s.Kind == KindHash || s.Kind == KindOpenAI || s.Kind == KindOllama {
		return s.Dim
	}
	return 0
}

// Options configure Open. The zero value (or nil) reads the remote
// servers' address and key from the environment.
type Options struct {
	// BaseURL is the server of an openai or ollama embedder; "" means
	// $OPENAI_BASE_URL (else the OpenAI API) or $OLLAMA_HOST (else
	// Ollama's default), an OLLAMA_HOST without a scheme taken as http.
	BaseURL string
	// APIKey is the openai embedder's key; "" means $OPENAI_API_KEY.
	APIKey string
	// Dimension, when set, is the dimension the embedder must have (that
	// of the store it embeds for): Open fails with ErrMismatch on another.
	Dimension int
}

// OpenFunc builds the embedder of a parsed specification of its kind. It
// makes no request and loads nothing it does not need to.
type OpenFunc func(ctx context.Context, s Spec, opts Options) (Embedder, error)

var (
	regMu    sync.RWMutex
	registry = map[string]OpenFunc{}
)

// Register makes Open build embedders of a kind. The implementations
// register from an init function, so a blank import is enough:
//
//	import _ "github.com/stratamem/strata/embed/uselite"
//
// Register panics if kind is empty or already registered, as
// database/sql.Register does.
func Register(kind string, open OpenFunc) {
	regMu.Lock()
	defer regMu.Unlock()
	if kind == "" || open == nil {
		panic("embed: Register with empty kind or nil opener")
	}
	if _, dup := registry[kind]; dup {
		panic("embed: Register called twice for kind " + kind)
	}
	registry[kind] = open
}

// Kinds returns the registered kinds, sorted.
func Kinds() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Open parses spec (ParseSpec) and builds its embedder, as vectorstore.Open
// and storage.Open do for their URLs: the default model is loaded from disk
// (uselite.Default), a remote embedder is configured but sent nothing.
// opts may be nil.
func Open(ctx context.Context, spec string, opts *Options) (Embedder, error) {
	sp, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	return sp.Open(ctx, opts)
}

// Open builds the embedder s names (see the package function Open) and
// checks its model id, and its dimension against opts.Dimension.
func (s Spec) Open(ctx context.Context, opts *Options) (Embedder, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if d := s.KnownDimension(); d != 0 && o.Dimension != 0 && d != o.Dimension {
		return nil, fmt.Errorf("%w: %s has dimension %d, the store's is %d", ErrMismatch, s, d, o.Dimension)
	}
	regMu.RLock()
	open := registry[s.Kind]
	regMu.RUnlock()
	if open == nil {
		return nil, fmt.Errorf("%w: %q (registered: %s; import github.com/stratamem/strata/embed/...)", ErrNotRegistered, s.Kind, strings.Join(Kinds(), ", "))
	}
	switch s.Kind {
	case KindOpenAI:
		o.BaseURL, o.APIKey = orEnv(o.BaseURL, "OPENAI_BASE_URL"), orEnv(o.APIKey, "OPENAI_API_KEY")
	case KindOllama:
		if o.BaseURL = orEnv(o.BaseURL, "OLLAMA_HOST"); o.BaseURL != "" && !strings.Contains(o.BaseURL, "://") {
			o.BaseURL = "http://" + o.BaseURL
		}
	}
	e, err := open(ctx, s, o)
	if err != nil {
		return nil, err
	}
	if e.Model() != s.ID() {
		return nil, fmt.Errorf("%w: %s reports model %q", ErrMismatch, s, e.Model())
	}
	if d := e.Dimension(); d != 0 && o.Dimension != 0 && d != o.Dimension {
		return nil, fmt.Errorf("%w: %s has dimension %d, the store's is %d", ErrMismatch, s, d, o.Dimension)
	}
	return e, nil
}

func orEnv(v, name string) string {
	if v == "" {
		return os.Getenv(name)
	}
	return v
}
