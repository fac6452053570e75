//go:build unix

package filestore

import (
	"errors"

	"golang.org/x/sys/unix"
)

// tryFlock takes an exclusive flock on fd without blocking. It reports
// false when another open file description holds the lock.
func tryFlock(fd uintptr) (bool, error) {
	for {
		err := unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		default:
			return false, err
		}
	}
}
