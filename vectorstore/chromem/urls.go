package chromem

import (
	"context"
	"maps"
	"net/url"
	"path/filepath"
	"slices"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

// Scheme is the URL scheme of this driver.
const Scheme = "chromem"

func init() { vectorstore.RegisterURLOpener(Scheme, &URLOpener{}) }

// URLOpener opens chromem URLs; its zero value is registered for Scheme.
// The driver has no options beyond the portable ones (vectorstore.Options,
// given to vectorstore.Open), so the struct is empty: it exists so that a
// chromem opener can be registered in a vectorstore.URLMux of the caller's
// like any other driver's.
type URLOpener struct{}

// OpenCollectionURL implements vectorstore.URLOpener; see openURL.
func (*URLOpener) OpenCollectionURL(ctx context.Context, u *url.URL, cfg driver.Config) (driver.Collection, error) {
	return openURL(ctx, u, cfg)
}

// openURL opens "chromem:///abs/dir?collection=name" or, for a path
// relative to the working directory, "chromem:rel/dir?collection=name". The
// driver takes no query parameters beyond the common ones: any other is
// refused, named in Field, before anything is created.
func openURL(ctx context.Context, u *url.URL, cfg driver.Config) (driver.Collection, error) {
	dir := u.Path
	if u.Opaque != "" {
		dir = u.Opaque
	}
	if u.Host != "" && u.Host != "localhost" {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "open", "url", "chromem URL has host %q; use chromem:///absolute/dir or chromem:relative/dir", u.Host)
	}
	if dir == "" {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "open", "url", "chromem URL names no directory")
	}
	q, err := vectorstore.Params(u)
	if err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "open", k, "unknown chromem URL parameter %q (chromem takes only the common ones: collection, dimension, distance, metadata_keys)", k)
	}
	return openDriver(ctx, filepath.Clean(dir), cfg)
}
