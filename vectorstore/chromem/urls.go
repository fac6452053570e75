package chromem

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

// Scheme is the URL scheme of this driver.
const Scheme = "chromem"

func init() { vectorstore.Register(Scheme, openURL) }

// openURL opens "chromem:///abs/dir?collection=name" or, for a path
// relative to the working directory, "chromem:rel/dir?collection=name". The
// driver takes no query parameters beyond the common ones.
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
	for k := range u.Query() {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "open", "url", "unknown chromem URL parameter %q (known: %s)", k, strings.Join([]string{"collection", "dimension", "distance", "metadata_keys"}, ", "))
	}
	return OpenDriver(ctx, filepath.Clean(dir), cfg)
}
