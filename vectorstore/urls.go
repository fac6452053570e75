package vectorstore

import (
	"context"
	"errors"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/stratamem/strata/vectorstore/driver"
)

// URLOpener opens a driver collection for a URL, in the manner of the Go
// CDK's URLOpener. The portable layer has already checked the query
// (well-formed, every parameter named once with a non-empty value), removed
// the common parameters (collection, dimension, distance, metadata_keys)
// from u and put them in cfg. The opener parses the rest and must reject,
// before connecting anywhere, every parameter it does not know and every
// value it cannot use, with a CodeInvalidArgument *driver.Error whose Field
// is the parameter's name (see Params).
//
// Every driver's package has a URLOpener struct holding its options, and
// registers its zero value under its scheme. To open a scheme with other
// options, register a configured opener under a scheme of your own, or
// build a URLMux:
//
//	mux := new(vectorstore.URLMux)
//	mux.Register("postgres", &pgvector.URLOpener{Options: pgvector.Options{Schema: "memory"}})
//	coll, err := mux.Open(ctx, "postgres://db/app?collection=memories", nil)
type URLOpener interface {
	OpenCollectionURL(ctx context.Context, u *url.URL, cfg driver.Config) (driver.Collection, error)
}

// OpenFunc is a URLOpener as a function.
type OpenFunc func(ctx context.Context, u *url.URL, cfg driver.Config) (driver.Collection, error)

// OpenCollectionURL calls f.
func (f OpenFunc) OpenCollectionURL(ctx context.Context, u *url.URL, cfg driver.Config) (driver.Collection, error) {
	return f(ctx, u, cfg)
}

// URLMux maps URL schemes to URLOpeners. The zero value is an empty mux,
// ready to use; DefaultURLMux is the one Open, Register and Schemes use.
// It is safe for concurrent use.
type URLMux struct {
	mu      sync.RWMutex
	openers map[string]URLOpener
}

var defaultMux = new(URLMux)

// DefaultURLMux returns the URLMux that Open uses and drivers register
// their default openers in.
func DefaultURLMux() *URLMux { return defaultMux }

// Register makes opener serve scheme (case-insensitive). It panics if
// scheme is empty, opener nil or scheme already registered, as
// database/sql.Register does: both are programming errors at init time.
func (m *URLMux) Register(scheme string, opener URLOpener) {
	m.mu.Lock()
	defer m.mu.Unlock()
	scheme = strings.ToLower(scheme)
	if scheme == "" || opener == nil {
		panic("vectorstore: Register with empty scheme or nil opener")
	}
	if f, ok := opener.(OpenFunc); ok && f == nil {
		panic("vectorstore: Register with empty scheme or nil opener")
	}
	if _, dup := m.openers[scheme]; dup {
		panic("vectorstore: Register called twice for scheme " + scheme)
	}
	if m.openers == nil {
		m.openers = map[string]URLOpener{}
	}
	m.openers[scheme] = opener
}

// Schemes returns the schemes registered in m, sorted.
func (m *URLMux) Schemes() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.openers))
}

func (m *URLMux) opener(scheme string) URLOpener {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.openers[scheme]
}

// Register makes a driver available under a URL scheme in DefaultURLMux,
// with a function as its opener. Drivers register from an init function in
// their urls.go (with RegisterURLOpener and their URLOpener), so a blank
// import is enough:
//
//	import _ "github.com/stratamem/strata/vectorstore/chromem"
//
// Register panics if scheme is empty or already registered, as
// database/sql.Register does: both are programming errors at init time.
func Register(scheme string, open OpenFunc) { defaultMux.Register(scheme, open) }

// RegisterURLOpener is Register for a URLOpener, e.g. a driver's URLOpener
// configured with its options under a scheme of the caller's.
func RegisterURLOpener(scheme string, opener URLOpener) { defaultMux.Register(scheme, opener) }

// Schemes returns the schemes registered in DefaultURLMux, sorted.
func Schemes() []string { return defaultMux.Schemes() }

// Params parses the query of a store URL strictly, for Open and for
// drivers: it fails with a CodeInvalidArgument *Error on a malformed query
// (url.ParseQuery's error, which url.Values.Get-style parsing ignores, so
// that "?collection=a;b" is not read as no collection at all), on a
// parameter given more than once, and on an empty name or value. Field is
// the parameter's name, or "url" when there is none. The error never quotes
// the URL, which may hold a password.
func Params(u *url.URL) (url.Values, error) {
	const op = "open"
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, &Error{Code: CodeInvalidArgument, Op: op, Field: "url", Msg: "malformed query (separate parameters with '&', escape ';' as %3B)", Err: err}
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		vs := q[k]
		switch {
		case k == "":
			return nil, &Error{Code: CodeInvalidArgument, Op: op, Field: "url", Msg: "query parameter with an empty name"}
		case len(vs) > 1:
			return nil, &Error{Code: CodeInvalidArgument, Op: op, Field: k, Msg: "parameter given " + strconv.Itoa(len(vs)) + " times"}
		case vs[0] == "":
			return nil, &Error{Code: CodeInvalidArgument, Op: op, Field: k, Msg: "empty value (omit the parameter for its default)"}
		}
	}
	return q, nil
}

// DefaultCollectionName is the collection opened when a URL names none.
const DefaultCollectionName = "memories"

// Open opens (creating if needed) the collection a URL names, with the
// driver registered for its scheme:
//
//	chromem:///var/lib/strata/vectors?collection=memories&dimension=384
//	postgres://user:pass@host/db?collection=memories
//	qdrant://localhost:6334?collection=memories&distance=cosine
//
// Common query parameters, understood for every scheme: collection (default
// "memories"), dimension, distance (cosine, dot, euclidean) and
// metadata_keys (comma-separated). A parameter given both in the URL and in
// opts must agree (ErrInvalidArgument otherwise). opts may be nil.
//
// The query is parsed strictly, because a parameter silently dropped can
// misroute data (a host that separates tenants by collection would write
// "?collection=a;b" into the default collection if the pair were skipped):
// a malformed query (a ';' separator, a bad %-escape), a parameter given
// twice, one with an empty name or value, and any parameter the driver does
// not know fail with ErrInvalidArgument, Field naming the parameter, before
// anything is opened.
func Open(ctx context.Context, rawURL string, opts *Options) (*Collection, error) {
	return defaultMux.Open(ctx, rawURL, opts)
}

// Open is vectorstore.Open with the openers of m.
func (m *URLMux) Open(ctx context.Context, rawURL string, opts *Options) (*Collection, error) {
	const op = "open"
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse quotes the whole URL in its error, password included:
		// keep only the reason.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, &Error{Code: CodeInvalidArgument, Op: op, Field: "url", Msg: "cannot parse URL", Err: err}
	}
	scheme := strings.ToLower(u.Scheme)
	open := m.opener(scheme)
	if open == nil {
		return nil, &Error{Code: CodeUnsupportedScheme, Op: op, Field: "url",
			Msg: "no driver for scheme " + strconv.Quote(u.Scheme) + " (registered: " + strings.Join(m.Schemes(), ", ") + "; import the driver package)"}
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	q, err := Params(u)
	if err != nil {
		return nil, err
	}
	cfg := DriverConfig(q.Get("collection"), &o)
	if cfg.Name == "" {
		cfg.Name = DefaultCollectionName
	}
	if s := q.Get("dimension"); s != "" {
		d, err := strconv.Atoi(s)
		if err != nil || d <= 0 || d > MaxDimension {
			return nil, &Error{Code: CodeInvalidArgument, Op: op, Field: "dimension", Msg: "bad dimension " + strconv.Quote(s)}
		}
		if cfg.Dimension != 0 && cfg.Dimension != d {
			return nil, &Error{Code: CodeInvalidArgument, Op: op, Field: "dimension", Msg: "URL and Options disagree"}
		}
		cfg.Dimension = d
	}
	if cfg.Dimension < 0 || cfg.Dimension > MaxDimension {
		return nil, &Error{Code: CodeInvalidArgument, Op: op, Field: "dimension", Msg: "dimension out of range: " + strconv.Itoa(cfg.Dimension)}
	}
	// Aliases ("l2", "ip", "Cosine") are resolved here: drivers store,
	// compare and score by the canonical name only.
	if cfg.Distance != "" {
		d, err := driver.ParseDistance(string(cfg.Distance))
		if err != nil {
			return nil, err
		}
		cfg.Distance = d
	}
	if s := q.Get("distance"); s != "" {
		d, err := driver.ParseDistance(s)
		if err != nil {
			return nil, err
		}
		if cfg.Distance != "" && cfg.Distance != d {
			return nil, &Error{Code: CodeInvalidArgument, Op: op, Field: "distance", Msg: "URL and Options disagree"}
		}
		cfg.Distance = d
	}
	if s := q.Get("metadata_keys"); s != "" {
		keys := strings.Split(s, ",")
		if cfg.MetadataKeys != nil && !slices.Equal(slices.Sorted(slices.Values(keys)), slices.Sorted(slices.Values(cfg.MetadataKeys))) {
			return nil, &Error{Code: CodeInvalidArgument, Op: op, Field: "metadata_keys", Msg: "URL and Options disagree"}
		}
		cfg.MetadataKeys = keys
		o.MetadataKeys = keys
	}
	for _, k := range cfg.MetadataKeys {
		if !ValidMetadataKey(k) {
			return nil, &Error{Code: CodeInvalidArgument, Op: op, Field: "metadata_keys", Msg: "invalid key " + quote(k)}
		}
	}
	for _, k := range []string{"collection", "dimension", "distance", "metadata_keys"} {
		q.Del(k)
	}
	u2 := *u
	u2.RawQuery = q.Encode()
	d, err := open.OpenCollectionURL(ctx, &u2, cfg)
	if err != nil {
		return nil, wrap(op, err)
	}
	return WrapOpened(d, nil, &o)
}
