package chromem

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/stratamem/strata/vectorstore/driver"
)

// openLog opens cdir's log and its checkpoint, replays the log through
// apply, and returns the log, the size of its good frames and the
// checkpoint, which the collection keeps up to date (checkpoint.acked after
// every fsynced append, writeCompacted on compaction) and closes.
//
// fresh says that meta.json was created by this open. A log missing next
// to a meta.json that existed is ErrCorrupt: its records are gone, and an
// empty store would hide that. A torn tail (an append interrupted by a
// crash, hence never acknowledged) is cut off, after its bytes are kept in
// records.log.torn-<offset> beside the log and a warning is logged with
// log/slog. Damage to acknowledged frames is ErrCorrupt, including a log
// that no longer holds what the checkpoint recorded as acknowledged (cut at
// a frame boundary, or a last frame damaged after its fsync); every such
// error says how to recover. A failed open leaves the log as it was.
//
// meta.json is written before the log is created, so a crash in between,
// on a collection's very first open, also leaves meta.json without a log:
// that too is reported, and Salvage makes it the empty collection it was.
func openLog(cdir string, fresh bool, sink *replaySink, apply func(entry, int) error) (*os.File, int64, *checkpoint, error) {
	path := filepath.Join(cdir, logFile)
	_, statErr := os.Stat(path)
	missing := errors.Is(statErr, fs.ErrNotExist)
	if missing && !fresh {
		return nil, 0, nil, corruptLog(cdir, "%s is missing, but %s exists: the collection's records are gone (deleted or moved)", logFile, metaFile)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("chromem: open log: %w", err)
	}
	good, ck, err := loadLog(cdir, f, missing, sink, apply)
	if err != nil {
		f.Close()
		return nil, 0, nil, err
	}
	return f, good, ck, nil
}

// loadLog is openLog once the log is open; on failure it has closed the
// checkpoint, and the caller closes f.
func loadLog(cdir string, f *os.File, created bool, sink *replaySink, apply func(entry, int) error) (int64, *checkpoint, error) {
	if created {
		if err := syncDir(cdir); err != nil {
			return 0, nil, err
		}
	}
	ck, st, err := openCkpt(cdir)
	if err != nil {
		return 0, nil, err
	}
	good, err := checkLog(cdir, f, ck, st, created, sink, apply)
	if err != nil {
		ck.close()
		return 0, nil, err
	}
	return good, ck, nil
}

// checkLog replays f, checks it against the checkpoint ck (read with state
// st), cuts a torn tail, and makes ck record the log as it now is.
func checkLog(cdir string, f *os.File, ck *checkpoint, st ckptState, created bool, sink *replaySink, apply func(entry, int) error) (int64, error) {
	var exts []extent
	switch {
	case created:
		// A new collection: a checkpoint left from an earlier one that was
		// removed (meta.json and log) says nothing about this log.
	case st == ckptOK:
		exts = ck.rec.extents()
	case st == ckptInvalid:
		slog.Warn("chromem: the log checkpoint is unreadable; the log is replayed without it", "file", ck.f.Name())
	}
	res, err := diagnose(cdir, f, exts, ck.rec, sink, apply)
	if err != nil {
		return 0, err
	}
	if res.good < res.size {
		if err := cutTornTail(f, res.good, res.size); err != nil {
			return 0, err
		}
	}
	// The checkpoint names only durable frames: an earlier process may
	// have been killed after writing its last frame, before the fsync.
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("chromem: sync log: %w", err)
	}
	if err := ck.reset(res.last, false); err != nil {
		return 0, err
	}
	return res.good, nil
}

// diagnose replays f through apply and checks it against exts, the
// extents of checkpoint rec: the checks of open, without side effects.
func diagnose(cdir string, f *os.File, exts []extent, rec ckptRecord, sink *replaySink, apply func(entry, int) error) (scanResult, error) {
	res, err := scan(f, exts, sink, apply)
	if err != nil {
		return res, withRecovery(cdir, err)
	}
	if !res.covered {
		return res, checkpointMismatch(cdir, res, rec)
	}
	return res, nil
}

// cutTornTail keeps the bytes of f from good to size in a new file beside
// the log, durably, logs a warning, and truncates f to good.
func cutTornTail(f *os.File, good, size int64) error {
	kept, err := keepBytes(f, good, size-good, f.Name()+".torn-"+strconv.FormatInt(good, 10))
	if err != nil {
		return fmt.Errorf("chromem: keep the torn tail of %s before cutting it: %w", f.Name(), err)
	}
	slog.Warn("chromem: cut a torn tail off the log: an append a crash interrupted, which the checkpoint does not record as acknowledged; its bytes are kept",
		"log", f.Name(), "offset", good, "bytes", size-good, "kept", kept)
	if err := f.Truncate(good); err != nil {
		return fmt.Errorf("chromem: truncate torn log tail: %w", err)
	}
	return nil
}

// keepBytes copies n bytes of f at off into a new file named base (or
// base.1, base.2, ... if taken), fsyncs it and its directory, and returns
// its path. It never overwrites a file.
func keepBytes(f *os.File, off, n int64, base string) (string, error) {
	var out *os.File
	name := base
	for i := 1; ; i++ {
		var err error
		out, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i > 1000 {
			return "", err
		}
		name = base + "." + strconv.Itoa(i)
	}
	_, err := io.Copy(out, io.NewSectionReader(f, off, n))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(name))
	}
	if err != nil {
		_ = os.Remove(name)
		return "", err
	}
	return name, nil
}

// checkpointMismatch is the error of a log that satisfies none of the
// checkpoint's extents.
func checkpointMismatch(cdir string, res scanResult, rec ckptRecord) error {
	want := rec.cur
	if rec.hasPend && rec.pend.size > want.size {
		want = rec.pend
	}
	ends := fmt.Sprintf("%d intact frames (%d bytes)", res.frames, res.good)
	switch {
	case res.good < res.size && want.size > res.good:
		return corruptLog(cdir, "the frame at offset %d is damaged or incomplete, but the checkpoint records the log up to offset %d as acknowledged (fsynced): the damage is not a torn write; before it the log holds %s", res.good, want.size, ends)
	case res.size < want.size:
		return corruptLog(cdir, "the log holds %s, but the checkpoint records %d bytes as acknowledged: %d bytes of acknowledged writes are missing (truncated)", ends, want.size, want.size-res.size)
	default:
		return corruptLog(cdir, "the log holds %s, but not the acknowledged frame the checkpoint records at offset %d: the log was changed or replaced (or compacted by an older strata)", ends, want.last)
	}
}

// corruptLog returns an ErrCorrupt about cdir's log with the recovery hint.
func corruptLog(cdir, format string, args ...any) *driver.Error {
	e := driver.Errorf(driver.CodeCorrupt, "open", "", format, args...)
	e.Msg = filepath.Join(cdir, logFile) + ": " + e.Msg + "; " + recoveryHint(cdir)
	return e
}

// withRecovery adds the log's path and the recovery hint to an ErrCorrupt
// of replay, and the path to other errors.
func withRecovery(cdir string, err error) error {
	var de *driver.Error
	if errors.As(err, &de) {
		if de.Code == driver.CodeCorrupt {
			de.Msg = filepath.Join(cdir, logFile) + ": " + de.Msg + "; " + recoveryHint(cdir)
		}
		return err
	}
	return fmt.Errorf("chromem: replay %s: %w", filepath.Join(cdir, logFile), err)
}

// recoveryHint says how to recover from a corrupt log: every ErrCorrupt
// about the log ends with it.
func recoveryHint(cdir string) string {
	return fmt.Sprintf("the log was left as it is. To recover, restore %s from a backup, or run `memctl salvage` on the store (chromem.Salvage(ctx, %q, %q, opts)): it keeps every intact record, moves the damaged log aside (nothing is deleted) and writes a clean one",
		cdir, filepath.Dir(cdir), filepath.Base(cdir))
}
