//go:build unix

package embedded

import (
	"bytes"
	"errors"
	"os"
	"strconv"

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
			writeHolder(f)
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

// writeHolder writes this process's pid into the lock file f, as
// information for the error of an Open that finds the lock taken; flock
// is the lock. Writing before truncating leaves a whole pid line at every
// moment, and a failure only loses the information.
func writeHolder(f *os.File) {
	line := strconv.Itoa(os.Getpid()) + "\n"
	if _, err := f.WriteAt([]byte(line), 0); err == nil {
		_ = f.Truncate(int64(len(line)))
	}
}

// lockHolder returns the pid the lock file f records, or 0 if none.
func lockHolder(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	line, _, _ := bytes.Cut(b[:n], []byte("\n"))
	pid, err := strconv.Atoi(string(bytes.TrimSpace(line)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
