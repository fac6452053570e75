// Package lockfile records which process holds a lock file. The lock
// itself is the caller's (flock on Unix); the pid written here is only
// information, so that an open that finds the lock taken can name the
// process holding it.
package lockfile

import (
	"bytes"
	"os"
	"strconv"
)

// WriteHolder records this process as the holder of the lock file f,
// which it has just locked. Writing before truncating means a reader sees
// a whole pid line (the new one, or the old one), never an empty file; a
// failure only loses the information.
func WriteHolder(f *os.File) {
	line := strconv.Itoa(os.Getpid()) + "\n"
	if _, err := f.WriteAt([]byte(line), 0); err == nil {
		_ = f.Truncate(int64(len(line)))
	}
}

// Holder returns the pid recorded in the lock file f, or 0 if none.
func Holder(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	line, _, _ := bytes.Cut(b[:n], []byte("\n"))
	pid, err := strconv.Atoi(string(bytes.TrimSpace(line)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
