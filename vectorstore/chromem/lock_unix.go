//go:build unix

package chromem

import (
	"errors"
	"os"
	"syscall"

	"github.com/stratamem/strata/vectorstore/driver"
)

// lockFile takes an exclusive advisory lock on f, so two processes (or two
// opens in one process) never append to the same log concurrently.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return driver.Errorf(driver.CodeInvalidArgument, "open", "", "collection %s is open elsewhere (locked)", f.Name())
	}
	return err
}
