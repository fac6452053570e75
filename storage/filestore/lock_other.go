//go:build !unix

package filestore

import "errors"

// tryFlock is not implemented off Unix; writes fail rather than run without
// cross-process exclusion.
func tryFlock(fd uintptr) (bool, error) {
	return false, errors.ErrUnsupported
}
