package qdrant

import (
	"context"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"time"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

// Scheme is the URL scheme of this driver.
const Scheme = "qdrant"

// APIKeyEnv is read for the API key when the URL carries none, so keys need
// not appear in URLs (which end up in logs and shell history).
const APIKeyEnv = "QDRANT_API_KEY"

func init() { vectorstore.RegisterURLOpener(Scheme, &URLOpener{}) }

// URLOpener opens qdrant:// URLs; its zero value is registered for Scheme.
// Options are the defaults of the driver's options (exact, timeout): a URL
// parameter overrides its field. The embedded vectorstore.Options are not
// read (vectorstore.Open takes those from the URL and its opts argument),
// and the opener always closes the client it creates. Register a
// configured opener under a scheme of your own or in a vectorstore.URLMux:
//
//	vectorstore.RegisterURLOpener("qdrant-exact", &qdrant.URLOpener{Options: qdrant.Options{Exact: true}})
type URLOpener struct {
	Options Options
}

// OpenCollectionURL implements vectorstore.URLOpener; see openURL.
func (o *URLOpener) OpenCollectionURL(ctx context.Context, u *url.URL, cfg driver.Config) (driver.Collection, error) {
	return openURL(ctx, u, cfg, o.Options)
}

// openURL opens "qdrant://host:6334?collection=memories". Parameters beyond
// the common ones: api_key (else $QDRANT_API_KEY), tls=true, exact=true
// (exact search, see Options.Exact), pool (gRPC connections, default 1),
// timeout (per call, see Options.Timeout, e.g. 10s). Any other parameter
// is refused, named in Field, before a client is created.
func openURL(ctx context.Context, u *url.URL, cfg driver.Config, base Options) (driver.Collection, error) {
	bad := func(field, format string, args ...any) error {
		return driver.Errorf(driver.CodeInvalidArgument, "open", field, format, args...)
	}
	if u.Path != "" && u.Path != "/" {
		return nil, bad("url", "qdrant URL takes no path (got %q); name the collection with ?collection=", u.Path)
	}
	qcfg := &qc.Config{Host: u.Hostname(), PoolSize: 1, SkipCompatibilityCheck: true}
	if qcfg.Host == "" {
		qcfg.Host = "localhost"
	}
	if p := u.Port(); p != "" {
		port, err := strconv.Atoi(p)
		if err != nil || port <= 0 || port > 65535 {
			return nil, bad("url", "bad port %q", p)
		}
		qcfg.Port = port
	}
	q, err := vectorstore.Params(u)
	if err != nil {
		return nil, err
	}
	o := base
	o.Options = vectorstore.Options{}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		v := q.Get(k)
		var err error
		switch k {
		case "api_key":
			qcfg.APIKey = v
		case "tls":
			qcfg.UseTLS, err = strconv.ParseBool(v)
		case "exact":
			o.Exact, err = strconv.ParseBool(v)
		case "pool":
			var n int
			n, err = strconv.Atoi(v)
			if err == nil && (n < 1 || n > 64) {
				err = strconv.ErrRange
			}
			qcfg.PoolSize = uint(n)
		case "timeout":
			o.Timeout, err = time.ParseDuration(v)
			if err == nil && o.Timeout <= 0 {
				err = strconv.ErrRange
			}
		default:
			return nil, bad(k, "unknown qdrant URL parameter %q (known: collection, dimension, distance, metadata_keys, api_key, tls, exact, pool, timeout)", k)
		}
		if err != nil {
			return nil, bad(k, "bad value %q: %v", v, err)
		}
	}
	if qcfg.APIKey == "" {
		qcfg.APIKey = os.Getenv(APIKeyEnv)
	}
	client, err := qc.NewClient(qcfg)
	if err != nil {
		return nil, err
	}
	o.CloseClient = true
	d, err := openDriver(ctx, client, cfg, &o)
	if err != nil {
		client.Close()
		return nil, err
	}
	return d, nil
}
