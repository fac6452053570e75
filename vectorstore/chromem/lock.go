package chromem

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stratamem/strata/internal/fsutil"
	"github.com/stratamem/strata/vectorstore/driver"
)

// lockFile takes an exclusive advisory lock on f, so two processes (or two
// opens in one process) never append to the same log concurrently, and
// records this process as the holder. A lock held elsewhere is a
// *LockedError naming the holder's pid. Where flock is unavailable (not
// Unix) it is a no-op: the caller must not open one collection from two
// processes at once.
func lockFile(f *os.File) error { return lockFor("open", f) }

// lockFor is lockFile for operation op.
func lockFor(op string, f *os.File) error {
	ok, err := fsutil.TryLock(f)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return nil
	case err != nil:
		return err
	case !ok:
		return busy(op, &LockedError{Path: filepath.Dir(f.Name()), PID: fsutil.Holder(f)})
	}
	fsutil.WriteHolder(f)
	return nil
}

// ErrLocked is wrapped by every *LockedError: the collection (or store) is
// open in another process, or already open in this one.
var ErrLocked = errors.New("chromem: locked by another open")

// LockedError reports a collection that cannot be opened because another
// open holds its lock. The lock is an flock on the LOCK file (Unix), which
// its holder releases when it closes the collection or exits; the holder's
// process id is written into the file as information only, so that the
// error can name it.
type LockedError struct {
	// What is locked: "collection" when empty, or e.g. "store".
	What string
	// Path is the locked directory.
	Path string
	// PID is the holder's process id as its lock file records it, or 0
	// if unknown (a holder that predates pid recording, or one that has
	// not written it yet).
	PID int
	// Err is the cause, if any: the context error that ended a wait.
	Err error
}

func (e *LockedError) Error() string {
	what := e.What
	if what == "" {
		what = "collection"
	}
	var s string
	switch {
	case e.PID == os.Getpid():
		s = fmt.Sprintf("%s %s is already open in this process (pid %d): close it before opening it again", what, e.Path, e.PID)
	case e.PID > 0:
		s = fmt.Sprintf("%s %s is open in another process (pid %d): stop it, or use a server backend (postgres) for several processes", what, e.Path, e.PID)
	default:
		s = fmt.Sprintf("%s %s is open in another process: stop it, or use a server backend (postgres) for several processes", what, e.Path)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrLocked and the cause, so errors.Is matches both.
func (e *LockedError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrLocked, driver.ErrBusy, e.Err}
	}
	return []error{ErrLocked, driver.ErrBusy}
}

// busy is the error of open (or salvage, op) finding the lock held.
//
// busy is the typed error of a held lock: CodeBusy, with the LockedError
// (holder and what to do) as its cause.
func busy(op string, le *LockedError) error {
	return &driver.Error{Code: driver.CodeBusy, Op: op, Err: le}
}
