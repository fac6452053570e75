//go:build unix

package embedded

import (
	"errors"
	"github.com/stratamem/strata/internal/lockfile"
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes an exclusive flock on f without blocking; ok is false when
// another open file description (another process, or another Open in this
// one) holds it. Once locked, f records this process as the holder (see
// lockHolder).
func tryLock(f *os.File) (ok bool, err error) {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			lockfile.WriteHolder(f)
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
