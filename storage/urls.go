package storage

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// OpenFunc opens a state store for a URL. Open has already parsed the URL
// and checked its query with Params; the driver reads the parameters it
// knows and must refuse, before connecting anywhere, every value it cannot
// use, with an error wrapping ErrInvalidURL.
type OpenFunc func(ctx context.Context, u *url.URL) (Store, error)

var (
	regMu    sync.RWMutex
	registry = map[string]OpenFunc{}
)

// ErrInvalidURL is wrapped by the errors of Open and of drivers for a URL
// they cannot use: unparsable, an unknown scheme, a bad parameter. Its
// messages never quote the URL, which may hold a password.
var ErrInvalidURL = errors.New("storage: invalid store URL")

// FileScheme is the scheme a plain directory path stands for.
const FileScheme = "file"

// Register makes a state-store driver available under a URL scheme.
// Drivers call it from an init function, so a blank import is enough:
//
//	import _ "github.com/stratamem/strata/storage/postgres"
//
// Register panics if scheme is empty or already registered (a programming
// error at init time, as for database/sql.Register).
func Register(scheme string, open OpenFunc) {
	regMu.Lock()
	defer regMu.Unlock()
	scheme = strings.ToLower(scheme)
	if scheme == "" || open == nil {
		panic("storage: Register with empty scheme or nil opener")
	}
	if _, dup := registry[scheme]; dup {
		panic("storage: Register called twice for scheme " + scheme)
	}
	registry[scheme] = open
}

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	return slices.Sorted(maps.Keys(registry))
}

func init() {
	Register(MemoryScheme, openMemory)
}

// MemoryScheme opens a new, empty Memory: "mem://" (or "mem:"). Every Open
// returns a store of its own; nothing is shared or kept.
const MemoryScheme = "mem"

func openMemory(_ context.Context, u *url.URL) (Store, error) {
	if (u.Host != "" && u.Host != "memory") || (u.Path != "" && u.Path != "/") || u.Opaque != "" || u.RawQuery != "" {
		return nil, fmt.Errorf("%w: mem:// takes no host, path or parameters", ErrInvalidURL)
	}
	return NewMemory(), nil
}

// Open opens the state store a URL names, with the driver registered for
// its scheme:
//
//	/var/lib/strata/state                    a directory (filestore)
//	file:///var/lib/strata/state             the same
//	postgres://user:pass@host/db             table strata_state (storage/postgres)
//	mem://                                   a new in-process Memory
//
// A value without a scheme is a directory path, opened by the "file"
// driver. The drivers register themselves when their package is imported
// (storage/filestore, storage/postgres); mem:// is always there.
//
// A URL may be the one that opens the vector store of the same
// environment (vectorstore.Open): the postgres driver ignores the vector
// side's parameters (collection, dimension, distance, metadata_keys, and
// pgvector's schema, index, m, ef_construction, ef_search, exact,
// copy_threshold) after checking the form of their values (an integer, a
// boolean, a known distance). The query is parsed strictly (see Params).
func Open(ctx context.Context, raw string) (Store, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalidURL)
	}
	var u *url.URL
	if isPath(raw) {
		u = &url.URL{Scheme: FileScheme, Path: raw}
	} else {
		var err error
		u, err = url.Parse(raw)
		if err != nil {
			// url.Parse quotes the whole URL, password included: keep the
			// reason only.
			var uerr *url.Error
			if errors.As(err, &uerr) {
				err = uerr.Err
			}
			return nil, fmt.Errorf("%w: cannot parse: %v", ErrInvalidURL, err)
		}
	}
	scheme := strings.ToLower(u.Scheme)
	regMu.RLock()
	open := registry[scheme]
	regMu.RUnlock()
	if open == nil {
		return nil, fmt.Errorf("%w: no state-store driver for scheme %q (registered: %s; import the driver package)",
			ErrInvalidURL, u.Scheme, strings.Join(Schemes(), ", "))
	}
	if _, err := Params(u); err != nil {
		return nil, err
	}
	return open(ctx, u)
}

// isPath reports whether raw is a directory path rather than a URL: it has
// no scheme ("state", "/var/lib/x", "./x"), or a one-letter one that is a
// Windows drive ("C:\\x").
func isPath(raw string) bool {
	i := strings.IndexByte(raw, ':')
	if i < 0 {
		return true
	}
	if i == 1 && filepath.VolumeName(raw) != "" {
		return true
	}
	for j, c := range raw[:i] {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return true // "./a:b": not a scheme
		}
	}
	return false
}

// Params parses the query of a store URL strictly: a malformed query (a
// ';' separator, a bad %-escape), a parameter given twice and one with an
// empty name or value fail with an error wrapping ErrInvalidURL that names
// the parameter, never the URL.
func Params(u *url.URL) (url.Values, error) {
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("%w: malformed query (separate parameters with '&', escape ';' as %%3B)", ErrInvalidURL)
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		switch vs := q[k]; {
		case k == "":
			return nil, fmt.Errorf("%w: query parameter with an empty name", ErrInvalidURL)
		case len(vs) > 1:
			return nil, fmt.Errorf("%w: parameter %q given %s times", ErrInvalidURL, k, strconv.Itoa(len(vs)))
		case vs[0] == "":
			return nil, fmt.Errorf("%w: parameter %q has an empty value (omit it for its default)", ErrInvalidURL, k)
		}
	}
	return q, nil
}
