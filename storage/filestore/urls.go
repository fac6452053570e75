package filestore

import (
	"context"
	"fmt"
	"net/url"

	"github.com/stratamem/strata/storage"
)

func init() { storage.Register(storage.FileScheme, openURL) }

// openURL opens "file:///var/lib/strata/state" (or "file://localhost/...",
// or "file:relative/dir") and the plain directory paths storage.Open hands
// to the "file" driver. It takes no parameters.
func openURL(_ context.Context, u *url.URL) (storage.Store, error) {
	if u.Host != "" && u.Host != "localhost" {
		return nil, fmt.Errorf("%w: file URL with a host (want file:///dir)", storage.ErrInvalidURL)
	}
	if u.RawQuery != "" {
		return nil, fmt.Errorf("%w: a file URL takes no parameters", storage.ErrInvalidURL)
	}
	dir := u.Path
	if u.Opaque != "" {
		p, err := url.PathUnescape(u.Opaque)
		if err != nil {
			return nil, fmt.Errorf("%w: bad %%-escape in file URL", storage.ErrInvalidURL)
		}
		dir = p
	}
	if dir == "" {
		return nil, fmt.Errorf("%w: file URL without a directory", storage.ErrInvalidURL)
	}
	return Open(dir, Options{})
}
