package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/internal/procinfo"
	"github.com/stratamem/strata/vectorstore/chromem"
)

// An embedded directory is written by one process at a time: its records
// collection is an append-only log under an flock (LOCK), which a running
// agent holds for as long as it has the store open. Its state store
// (filestore) takes writers from several processes, and strata.json is
// only read. So a read command finds the records locked while an agent
// runs, and reads a snapshot instead:
//
//   - records.log is append-only and replaced only by a rename (a
//     compaction writes the new log beside it): a copy of it is a prefix
//     of the live log, whose last frame may be torn (an append in flight,
//     not acknowledged yet), which the open of the copy cuts off as it
//     cuts a crash's torn tail. Nothing of the live directory is written.
//   - records.ckpt (the checkpoint of acknowledged bytes) is not copied: a
//     compaction between its copy and the log's would make a sound log
//     look damaged, and without it the copy opens as a log that predates
//     checkpoints does.
//   - the state is read in place: filestore is safe for readers beside
//     writers in other processes (every value is replaced by a rename).
//
// The snapshot costs a copy of the log in the temporary directory, removed
// when the store is closed.

// lockedHint is what memctl says to do about a store another process
// holds.
const lockedHint = "memctl ls, show, search, stats, export, inspect and state ls/show read a snapshot of it meanwhile; " +
	"to change it, stop that process, or serve the store with strata serve and run memctl with --server URL " +
	"(a postgres store takes several processes)"

// LockedError is an embedded store another process holds, named with
// the holder (pid and command line) and what to do. It wraps ErrLocked.
type LockedError struct {
	Dir string
	// Holder is "process 1234 (agent: ./agent -serve)", or "another
	// process" when the lock file names none.
	Holder string
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("store %s is open in %s, which holds it for writing; %s", e.Dir, e.Holder, lockedHint)
}

// Unwrap lets errors.Is(err, ErrLocked) match.
func (e *LockedError) Unwrap() error { return ErrLocked }

// lockedError words the lock le of the store dir.
func lockedError(dir string, le *chromem.LockedError) *LockedError {
	who := "another process"
	if le.PID > 0 {
		who = "process " + holderOf(le.PID)
	}
	return &LockedError{Dir: dir, Holder: who}
}

// holderOf names the process pid: "1234 (agent: ./agent -serve)", from
// /proc where there is one, else the pid alone.
func holderOf(pid int) string {
	s := strconv.Itoa(pid)
	name := procinfo.Field("/proc/"+s+"/status", "Name")
	raw, _ := os.ReadFile("/proc/" + s + "/cmdline")
	cmdline := strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " "))
	switch {
	case name != "" && cmdline != "":
		return fmt.Sprintf("%s (%s: %s)", s, name, clip(cmdline, 80))
	case name != "":
		return fmt.Sprintf("%s (%s)", s, name)
	case cmdline != "":
		return fmt.Sprintf("%s (%s)", s, clip(cmdline, 80))
	}
	return s
}

// asLocked finds the lock of another process in an open's error.
func asLocked(err error) (*chromem.LockedError, bool) {
	var le *chromem.LockedError
	if !errors.As(err, &le) || le.PID == os.Getpid() {
		return nil, false
	}
	return le, true
}

// openSnapshot opens a snapshot of the embedded directory dir, whose
// records another process holds, with its state store in place. The
// returned cleanup removes the snapshot; call it after closing the env.
func openSnapshot(ctx context.Context, dir string, opts environment.Options) (*environment.Env, func(), error) {
	tmp, err := os.MkdirTemp("", "memctl-snapshot-")
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot of %s: %w", dir, err)
	}
	cleanup := func() { _ = os.RemoveAll(tmp) }
	coll := filepath.Join("records", embedded.Collection)
	// The log before its meta.json: a meta.json read later belongs to
	// the same log or a later compaction of it, which changes nothing a
	// reader uses (the dimension and distance are fixed).
	for _, name := range []string{"strata.json", filepath.Join(coll, "records.log"), filepath.Join(coll, "meta.json")} {
		if err := copyFile(filepath.Join(dir, name), filepath.Join(tmp, name)); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("snapshot of %s: %w", dir, err)
		}
	}
	opts.State = filepath.Join(dir, "state")
	opts.MustExist = true
	// The copy's torn tail, if an append was in flight, is expected: the
	// warning the log's open logs for a crash's would mislead.
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	env, err := environment.Open(ctx, tmp, opts)
	slog.SetDefault(prev)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return env, cleanup, nil
}

// copyFile copies src to dst, creating dst's directory.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no %s", filepath.Base(src))
		}
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
