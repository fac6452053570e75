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

// OpenFunc opens a driver collection for a URL. The portable layer has
// already checked the query (well-formed, every parameter named once with a
// non-empty value), removed the common parameters (collection, dimension,
// distance, metadata_keys) from u and put them in cfg. The driver parses the
// rest and must reject, before connecting anywhere, every parameter it does
// not know and every value it cannot use, with a CodeInvalidArgument
// *driver.Error whose Field is the parameter's name (see Params).
type OpenFunc func(ctx context.Context, u *url.URL, cfg driver.Config) (driver.Collection, error)

var (
	regMu    sync.RWMutex
	registry = map[string]OpenFunc{}
)

// Register makes a driver available under a URL scheme. Drivers call it from
// an init function in their urls.go, so a blank import is enough:
//
//	import _ "github.com/stratamem/strata/vectorstore/chromem"
//
// Register panics if scheme is empty or already registered, as
// database/sql.Register does: both are programming errors at init time.
func Register(scheme string, open OpenFunc) {
	regMu.Lock()
	defer regMu.Unlock()
	scheme = strings.ToLower(scheme)
	if scheme == "" || open == nil {
		panic("vectorstore: Register with empty scheme or nil opener")
	}
	if _, dup := registry[scheme]; dup {
		panic("vectorstore: Register called twice for scheme " + scheme)
	}
	registry[scheme] = open
}

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(registry))
	for s := range registry {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

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
	regMu.RLock()
	open := registry[scheme]
	regMu.RUnlock()
	if open == nil {
		return nil, &Error{Code: CodeUnsupportedScheme, Op: op, Field: "url",
			Msg: "no driver for scheme " + strconv.Quote(u.Scheme) + " (registered: " + strings.Join(Schemes(), ", ") + "; import the driver package)"}
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	q, err := Params(u)
	if err != nil {
		return nil, err
	}
	cfg := driver.Config{Name: q.Get("collection"), Dimension: o.Dimension, Distance: o.Distance, MetadataKeys: o.MetadataKeys}
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
	d, err := open(ctx, &u2, cfg)
	if err != nil {
		return nil, wrap(op, err)
	}
	c, err := NewCollection(d, &o)
	if err != nil {
		_ = d.Close()
		return nil, err
	}
	return c, nil
}
