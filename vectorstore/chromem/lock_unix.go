//go:build unix

package chromem

import (
	"errors"
	"github.com/stratamem/strata/internal/lockfile"
	"os"
	"path/filepath"
	"syscall"
)

// lockFile takes an exclusive advisory lock on f, so two processes (or two
// opens in one process) never append to the same log concurrently, and
// records this process as the holder. A lock held elsewhere is a
// *LockedError naming the holder's pid.
func lockFile(f *os.File) error { return lockFor("open", f) }

// lockFor is lockFile for operation op.
func lockFor(op string, f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			lockfile.WriteHolder(f)
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return busy(op, &LockedError{Path: filepath.Dir(f.Name()), PID: lockfile.Holder(f)})
		default:
			return err
		}
	}
}
