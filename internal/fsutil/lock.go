package fsutil

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"time"
)

// TryLock takes an exclusive flock on f without blocking. ok is false when
// another open file description (another process, or another open of the
// file in this one) holds it. Closing f releases the lock. Where flock is
// unavailable (not Unix) the error matches errors.ErrUnsupported, and the
// caller decides whether to go on without cross-process exclusion.
func TryLock(f *os.File) (ok bool, err error) { return tryLock(f) }

// LockWait takes an exclusive flock on f, waiting while another open file
// description holds it. flock cannot be interrupted by a context, so it
// polls TryLock, first after the delay first, doubling up to maxWait, until
// ctx ends: then it returns ctx.Err(). TryLock's errors are returned as
// they are.
func LockWait(ctx context.Context, f *os.File, first, maxWait time.Duration) error {
	wait := first
	for {
		ok, err := tryLock(f)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, maxWait)
	}
}

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
