// Package environment opens everything a strata runtime works with, the
// memory records, the layer state and the embedder, from one directory or
// one server URL, and returns it as one value with one Close:
//
//	env, err := environment.Open(ctx, "/var/lib/strata", environment.Options{})
//	env, err := environment.Open(ctx, "postgres://app@db/strata?collection=memories", environment.Options{})
//	env, err := environment.Open(ctx, "qdrant://localhost:6334?collection=memories",
//		environment.Options{State: "postgres://app@db/strata"})
//	defer env.Close()
//	mem, state := env.Memory, env.State // memory layers, core.Config.Store
//
// # Targets
//
//   - a directory path or file:///dir: the embedded default (package
//     embedded): records in <dir>/records, state in <dir>/state, the
//     embedder in <dir>/strata.json;
//   - postgres:// (postgresql://): records in a pgvector collection, state
//     in table strata_state of the same database (storage/postgres, which
//     ignores the vector side's URL parameters);
//   - qdrant://: records in a Qdrant collection; no state store unless
//     Options.State names one;
//   - chromem:///dir: a bare chromem collection; no state store unless
//     Options.State names one.
//
// Options.State, when set, is opened with storage.Open instead.
//
// # The embedder record
//
// Every collection remembers which embedder wrote it, its model id
// (embed.Embedder.Model) and dimension: the directory in strata.json,
// pgvector in table strata_vec_embedders, Qdrant in the collection's
// metadata (servers 1.16 and later). Vectors of two models are not
// comparable, so opening with Options.Embedder set to another model than
// the recorded one fails with *EmbedderMismatchError (errors.As), which
// names both. With Options.Embedder nil the recorded embedder is used
// (built by Options.Resolve).
//
// A collection with no record yet is recorded when Open creates it, when
// it is empty, or when Options.Embedder is set: the caller names the
// embedder of the existing vectors, as for a store written by older
// strata, which recorded nothing on the server backends. An unrecorded
// non-empty collection opened without Options.Embedder is opened with
// Options.NewEmbedder (else the default model) and left unrecorded
// (Env.Recorded is zero): its embedder is not known. A bare chromem
// collection, and a Qdrant server without collection metadata, record
// nothing.
package environment

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"

	// The backends an environment opens.
	_ "github.com/stratamem/strata/storage/filestore"
	_ "github.com/stratamem/strata/storage/postgres"
	_ "github.com/stratamem/strata/vectorstore/chromem"
	_ "github.com/stratamem/strata/vectorstore/qdrant"
)

// Record is an embedder as recorded with a collection: model id and
// dimension.
type Record = embedded.Meta

// EmbedderMismatchError is returned by Open when the collection was
// embedded with another model (or dimension) than Options.Embedder. It
// wraps ErrEmbedderMismatch.
type EmbedderMismatchError = embedded.EmbedderMismatchError

// ErrEmbedderMismatch is wrapped by *EmbedderMismatchError.
var ErrEmbedderMismatch = embedded.ErrEmbedderMismatch

var (
	// ErrNotExist is wrapped when Options.MustExist is set and there is no
	// store: a directory without strata.json, a server without the
	// collection.
	ErrNotExist = errors.New("environment: no store")
	// ErrUnknownEmbedder is wrapped when the recorded embedder is not one
	// DefaultResolve can build; set Options.Resolve or Options.Embedder.
	ErrUnknownEmbedder = errors.New("environment: unknown embedder")
	// ErrInvalidTarget is wrapped for a target Open cannot read.
	ErrInvalidTarget = errors.New("environment: invalid target")
)

// Options configure Open. The zero value opens or creates the target with
// the recorded embedder, else the default model.
type Options struct {
	// Embedder is the embedder to use. A collection that recorded another
	// fails the open (*EmbedderMismatchError); one with no record records
	// it. nil: the recorded embedder (Resolve), else NewEmbedder.
	Embedder embed.Embedder
	// Resolve builds the recorded embedder when Embedder is nil. nil means
	// DefaultResolve.
	Resolve func(ctx context.Context, rec Record) (embed.Embedder, error)
	// NewEmbedder supplies the embedder when Embedder is nil and none is
	// recorded: of a collection Open creates (dim 0), or of an existing
	// unrecorded one (dim its dimension). nil means the default model
	// (uselite.Default).
	NewEmbedder func(ctx context.Context, dim int) (embed.Embedder, error)
	// MustExist makes a missing store an error wrapping ErrNotExist
	// instead of creating it.
	MustExist bool
	// Dimension and Distance, when set, are checked against an existing
	// collection and used to create one (server backends; an embedded
	// directory takes the embedder's dimension and cosine).
	Dimension int
	Distance  vectorstore.Distance
	// State is the state store's URL (storage.Open) instead of the
	// target's own.
	State string
	// NoState opens no state store (Env.State is nil).
	NoState bool
}

// Env is an open environment.
type Env struct {
	// Target is the directory, or the URL with its password redacted.
	Target string
	// Dir is the directory of an embedded store, "" for a URL.
	Dir string
	// Memory is what memory layers take: the records and the embedder.
	Memory *memory.Store
	// State is the layer-state store (core.Config.Store); nil when the
	// target has none and Options.State named none, or with NoState.
	State storage.Store
	// Embedded is the embedded environment of a directory target.
	Embedded *embedded.Env
	// Recorded is the embedder recorded with the collection; zero when
	// none is (see the package documentation).
	Recorded Record
	// RecordedIn says where Recorded is kept, for messages.
	RecordedIn string
	// Created reports that Open created the collection.
	Created bool

	ownState bool
}

// Records is the records collection (Memory.Records).
func (e *Env) Records() *vectorstore.Collection { return e.Memory.Records }

// Close closes the records, the state store and everything else Open
// opened.
func (e *Env) Close() error {
	if e == nil {
		return nil
	}
	if e.Embedded != nil {
		err := e.Embedded.Close()
		if e.ownState && e.State != nil {
			err = errors.Join(err, e.State.Close())
		}
		return err
	}
	err := e.Memory.Records.Close()
	if e.State != nil {
		err = errors.Join(err, e.State.Close())
	}
	return err
}

// Open opens (creating if needed, unless Options.MustExist) the
// environment at target: a directory, file:///dir, or a vector store URL
// (postgres://, qdrant://, chromem://). See the package documentation.
func Open(ctx context.Context, target string, opts Options) (*Env, error) {
	dir, rawURL, err := parseTarget(target)
	if err != nil {
		return nil, err
	}
	var env *Env
	if dir != "" {
		env, err = openDir(ctx, dir, opts)
	} else {
		env, err = openURL(ctx, rawURL, opts)
	}
	if err != nil {
		return nil, err
	}
	if opts.NoState || opts.State == "" {
		return env, nil
	}
	st, err := storage.Open(ctx, opts.State)
	if err != nil {
		_ = env.Close()
		return nil, fmt.Errorf("environment: open state store: %w", err)
	}
	env.State, env.ownState = st, true
	return env, nil
}

// parseTarget splits a target into a directory or a URL.
func parseTarget(target string) (dir, rawURL string, err error) {
	if strings.TrimSpace(target) == "" {
		return "", "", fmt.Errorf("%w: empty", ErrInvalidTarget)
	}
	i := strings.Index(target, ":")
	if i <= 1 || !strings.Contains(target, "://") && !strings.HasPrefix(strings.ToLower(target), "file:") {
		return filepath.Clean(target), "", nil // a path (or a Windows drive)
	}
	u, err := url.Parse(target)
	if err != nil {
		return "", "", fmt.Errorf("%w: cannot parse URL", ErrInvalidTarget)
	}
	if strings.EqualFold(u.Scheme, "file") {
		if u.Host != "" && u.Host != "localhost" {
			return "", "", fmt.Errorf("%w: file URL with a host (want file:///dir)", ErrInvalidTarget)
		}
		p := u.Path
		if u.Opaque != "" {
			p = u.Opaque
		}
		if p == "" {
			return "", "", fmt.Errorf("%w: file URL without a directory", ErrInvalidTarget)
		}
		return filepath.Clean(p), "", nil
	}
	return "", target, nil
}

func openDir(ctx context.Context, dir string, opts Options) (*Env, error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is a file, not a directory", ErrInvalidTarget, dir)
	}
	meta, err := embedded.ReadMeta(dir)
	var emb embed.Embedder
	created := false
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if opts.MustExist {
			return nil, fmt.Errorf("%w at %s (no %s)", ErrNotExist, dir, "strata.json")
		}
		if emb, err = newEmbedder(ctx, opts, 0); err != nil {
			return nil, err
		}
		if _, err := dimensionOf(ctx, emb); err != nil {
			return nil, err
		}
		created = true
	case err != nil:
		return nil, err
	case opts.Embedder != nil:
		emb = opts.Embedder // embedded.Open compares it with strata.json
	default:
		if emb, err = resolve(ctx, opts, meta); err != nil {
			return nil, err
		}
	}
	if d := opts.Dimension; d > 0 && emb.Dimension() > 0 && d != emb.Dimension() {
		return nil, fmt.Errorf("%w: %s has %d-d vectors (%s), %d-d asked for", vectorstore.ErrDimensionMismatch, dir, emb.Dimension(), emb.Model(), d)
	}
	ee, err := embedded.Open(ctx, dir, embedded.Options{Embedder: emb})
	if err != nil {
		return nil, err
	}
	if d := opts.Distance; d != "" {
		if pd, err := vectorstore.ParseDistance(string(d)); err != nil || pd != ee.Memory.Records.Info().Distance {
			_ = ee.Close()
			return nil, fmt.Errorf("%w: %s uses distance %s, %s asked for", vectorstore.ErrConfigMismatch, dir, ee.Memory.Records.Info().Distance, d)
		}
	}
	env := &Env{Target: dir, Dir: dir, Memory: ee.Memory, Embedded: ee, Created: created,
		Recorded: Record{Embedder: emb.Model(), Dimension: ee.Memory.Records.Info().Dimension}, RecordedIn: filepath.Join(dir, "strata.json")}
	if !opts.NoState {
		env.State = ee.State
	}
	return env, nil
}

// recorder is what the collections that keep the embedder record
// (pgvector, qdrant) give through As.
type recorder = vectorstore.EmbedderRecorder

func openURL(ctx context.Context, rawURL string, opts Options) (*Env, error) {
	shown := redact(rawURL)
	vopts := &vectorstore.Options{Dimension: opts.Dimension, Distance: opts.Distance}
	coll, err := vectorstore.Open(ctx, rawURL, vopts)
	var emb embed.Embedder
	created := false
	if IsMissingCollection(err) {
		if opts.MustExist {
			return nil, fmt.Errorf("%w: %s has no collection %q yet", ErrNotExist, shown, CollectionName(rawURL))
		}
		if emb, err = newEmbedder(ctx, opts, 0); err != nil {
			return nil, err
		}
		dim, err := dimensionOf(ctx, emb)
		if err != nil {
			return nil, err
		}
		if opts.Dimension > 0 && opts.Dimension != dim {
			return nil, fmt.Errorf("%w: %s makes %d-d vectors, %d-d asked for", vectorstore.ErrDimensionMismatch, emb.Model(), dim, opts.Dimension)
		}
		vopts.Dimension = dim
		coll, err = vectorstore.Open(ctx, rawURL, vopts)
		created = err == nil
	}
	if err != nil {
		return nil, err
	}
	env := &Env{Target: shown, Created: created}
	fail := func(err error) (*Env, error) {
		_ = coll.Close()
		return nil, err
	}
	info := coll.Info()
	where := shown + " collection " + info.Name
	var rec recorder
	recordable := coll.As(&rec)
	if recordable {
		m, d, err := rec.EmbedderRecord(ctx)
		if err != nil {
			return fail(err)
		}
		env.Recorded = Record{Embedder: m, Dimension: d}
		env.RecordedIn = recordedIn(info)
	}
	switch {
	case env.Recorded.Embedder != "" && opts.Embedder != nil:
		if given := (Record{Embedder: opts.Embedder.Model(), Dimension: opts.Embedder.Dimension()}); given.Embedder != env.Recorded.Embedder ||
			given.Dimension != 0 && given.Dimension != env.Recorded.Dimension {
			if given.Dimension == 0 {
				given.Dimension = info.Dimension
			}
			return fail(&EmbedderMismatchError{Store: where, Recorded: env.Recorded, Given: given})
		}
		emb = opts.Embedder
	case env.Recorded.Embedder != "":
		if emb, err = resolve(ctx, opts, env.Recorded); err != nil {
			return fail(err)
		}
	case emb == nil:
		if emb, err = newEmbedder(ctx, opts, info.Dimension); err != nil {
			return fail(err)
		}
	}
	if d := emb.Dimension(); d != 0 && d != info.Dimension {
		return fail(fmt.Errorf("%w: %s has %d-d vectors, embedder %s makes %d-d", vectorstore.ErrDimensionMismatch, where, info.Dimension, emb.Model(), d))
	}
	if recordable && env.Recorded.Embedder == "" {
		record := created || opts.Embedder != nil
		if !record {
			n, err := coll.Count(ctx, vectorstore.Filter{})
			if err != nil {
				return fail(err)
			}
			record = n == 0
		}
		if record {
			if err := env.record(ctx, rec, where, emb, info.Dimension); err != nil {
				return fail(err)
			}
		}
	}
	env.Memory = &memory.Store{Records: coll, Embedder: emb}
	if !opts.NoState && opts.State == "" && (isPGVector(info) || strings.HasPrefix(strings.ToLower(rawURL), "postgres")) {
		st, err := storage.Open(ctx, rawURL)
		if err != nil {
			return fail(fmt.Errorf("environment: open state store at %s: %w", shown, err))
		}
		env.State = st
	}
	return env, nil
}

// Record records emb as the embedder of a collection that has no record
// yet (see the package documentation for when Open does it by itself): a
// caller that knows which embedder wrote an older collection names it
// once. A collection that recorded another embedder yields
// *EmbedderMismatchError; one that records nothing (a bare chromem
// collection, a Qdrant server without collection metadata) is left as it
// is. The directory target always has its record.
func (e *Env) Record(ctx context.Context, emb embed.Embedder) error {
	if e.Embedded != nil {
		if e.Recorded.Embedder != emb.Model() {
			return &EmbedderMismatchError{Store: e.Target, Recorded: e.Recorded, Given: Record{Embedder: emb.Model(), Dimension: emb.Dimension()}}
		}
		return nil
	}
	var rec recorder
	if !e.Memory.Records.As(&rec) {
		return nil
	}
	where := e.Target + " collection " + e.Memory.Records.Info().Name
	if e.Recorded.Embedder != "" {
		if e.Recorded.Embedder != emb.Model() {
			return &EmbedderMismatchError{Store: where, Recorded: e.Recorded, Given: Record{Embedder: emb.Model(), Dimension: emb.Dimension()}}
		}
		return nil
	}
	return e.record(ctx, rec, where, emb, e.Memory.Records.Info().Dimension)
}

// record records emb, whose vectors are dim-dimensional, in rec.
func (e *Env) record(ctx context.Context, rec recorder, where string, emb embed.Embedder, dim int) error {
	if d := emb.Dimension(); d != 0 && d != dim {
		return fmt.Errorf("%w: %s has %d-d vectors, embedder %s makes %d-d", vectorstore.ErrDimensionMismatch, where, dim, emb.Model(), d)
	}
	want := Record{Embedder: emb.Model(), Dimension: dim}
	m, d, err := rec.RecordEmbedder(ctx, want.Embedder, want.Dimension)
	if err != nil {
		return err
	}
	got := Record{Embedder: m, Dimension: d}
	if m != "" && got != want {
		// Recorded by another opener in the meantime.
		return &EmbedderMismatchError{Store: where, Recorded: got, Given: want}
	}
	e.Recorded = got
	return nil
}

func recordedIn(info vectorstore.Info) string {
	switch {
	case isPGVector(info):
		return "table strata_vec_embedders"
	case info.Driver == "qdrant":
		return "the collection's metadata"
	}
	return info.Driver
}

func newEmbedder(ctx context.Context, opts Options, dim int) (embed.Embedder, error) {
	switch {
	case opts.Embedder != nil:
		return opts.Embedder, nil
	case opts.NewEmbedder != nil:
		return opts.NewEmbedder(ctx, dim)
	}
	return uselite.Default()
}

func resolve(ctx context.Context, opts Options, rec Record) (embed.Embedder, error) {
	if opts.Resolve != nil {
		return opts.Resolve(ctx, rec)
	}
	return DefaultResolve(ctx, rec)
}

// DefaultResolve builds the recorded embedder from its model id with
// embed.Open: the default model (uselite.ModelID), hashing ("hash-N") and
// the remote models ("openai:MODEL", "ollama:MODEL", configured from the
// environment). Any other yields an error wrapping ErrUnknownEmbedder.
func DefaultResolve(ctx context.Context, rec Record) (embed.Embedder, error) {
	return openRecorded(ctx, rec)
}

// dimensionOf makes an embedder's dimension known: its Dimension, else
// its Resolve(ctx) (a lazily loaded embedder), else the length of one
// probe embedding.
func dimensionOf(ctx context.Context, emb embed.Embedder) (int, error) {
	if d := emb.Dimension(); d > 0 {
		return d, nil
	}
	if r, ok := emb.(interface {
		Resolve(context.Context) (int, error)
	}); ok {
		return r.Resolve(ctx)
	}
	vs, err := emb.Embed(ctx, []string{"dimension probe"})
	if err != nil {
		return 0, err
	}
	if len(vs) != 1 || len(vs[0]) == 0 {
		return 0, fmt.Errorf("%w: %s returned no vector for a probe", embed.ErrBadResponse, emb.Model())
	}
	return len(vs[0]), nil
}

// IsMissingCollection reports whether err is vectorstore.Open's for a
// collection that does not exist and was given no dimension to create it.
func IsMissingCollection(err error) bool {
	var e *vectorstore.Error
	return errors.As(err, &e) && e.Code == vectorstore.CodeInvalidArgument && e.Field == "dimension" && strings.Contains(e.Msg, "does not exist")
}

// CollectionName is the collection a store URL names (its collection
// parameter, else vectorstore.DefaultCollectionName).
func CollectionName(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		if q, err := url.ParseQuery(u.RawQuery); err == nil && q.Get("collection") != "" {
			return q.Get("collection")
		}
	}
	return vectorstore.DefaultCollectionName
}

// redact hides the password of a URL, and the values of parameters named
// like credentials, for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err == nil {
			for k := range q {
				switch strings.ToLower(k) {
				case "password", "sslpassword", "api_key", "apikey", "token":
					q.Set(k, "xxxxx")
				}
			}
			u.RawQuery = q.Encode()
		} else {
			u.RawQuery = ""
		}
	}
	return u.String()
}
