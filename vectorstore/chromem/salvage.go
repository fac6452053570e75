package chromem

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/stratamem/strata/internal/fsutil"
	"github.com/stratamem/strata/vectorstore/driver"
)

// SalvageOptions configure Salvage.
type SalvageOptions struct {
	// DryRun only reports what Salvage would keep and lose: nothing is
	// written (apart from the holder's pid in the LOCK file it takes).
	DryRun bool
}

// Span is a byte range of a log.
type Span struct {
	Offset int64 `json:"offset"`
	Bytes  int64 `json:"bytes"`
}

// SalvageReport says what Salvage found and did.
type SalvageReport struct {
	// Dir is the collection directory.
	Dir string `json:"dir"`
	// Healthy: the collection opens as it is (after cutting a torn tail,
	// if any), so Salvage changed nothing.
	Healthy bool `json:"healthy"`
	// Problem is why the collection does not open: the ErrCorrupt that
	// open reports. Empty when Healthy.
	Problem string `json:"problem,omitempty"`
	// LogMissing: records.log did not exist.
	LogMissing bool `json:"log_missing,omitempty"`
	// LogBytes is the size of the log read.
	LogBytes int64 `json:"log_bytes"`
	// Frames is the number of intact frames read and replayed, in log order.
	Frames int `json:"frames"`
	// Records is the number of records in the salvaged collection.
	Records int `json:"records"`
	// Damaged are the byte ranges of the log that are not intact frames
	// and were skipped; each held (part of) at least one frame, whose
	// upserts or deletes are lost. DamagedBytes is their total.
	Damaged      []Span `json:"damaged,omitempty"`
	DamagedBytes int64  `json:"damaged_bytes"`
	// MissingBytes is how many bytes of acknowledged frames the checkpoint
	// records past the end of the log: they were cut off and cannot be
	// recovered from this directory.
	MissingBytes int64 `json:"missing_bytes"`
	// KeptAs is where the damaged log was kept (a hard link to it, or a
	// copy): records.log.damaged-<time>. Empty on a dry run, when Healthy,
	// or when there was no log.
	KeptAs string `json:"kept_as,omitempty"`
	// DryRun: nothing was written.
	DryRun bool `json:"dry_run,omitempty"`
}

// Salvage recovers the collection name under dir after open reported it
// ErrCorrupt: it reads every intact frame of the log (skipping damaged
// ranges and resynchronising on the next valid frame), keeps the damaged
// log as records.log.damaged-<time> beside it (it is never deleted), and
// writes a clean log holding the records those frames leave, with a new
// checkpoint. The report says how many records were kept and what was
// lost. A collection that opens as it is is left alone (Healthy). With
// opts.DryRun it only reports.
//
// Salvage takes the collection's lock, so it fails with a *LockedError
// while the collection is open. It needs meta.json (which holds the
// dimension and distance): without it the error is ErrNotFound, and a
// damaged meta.json is ErrCorrupt. A crash during Salvage leaves either
// the damaged log or the clean one in place, and Salvage can run again.
func Salvage(ctx context.Context, dir, name string, opts SalvageOptions) (SalvageReport, error) {
	const op = "salvage"
	if !validName(name) {
		return SalvageReport{}, driver.Errorf(driver.CodeInvalidArgument, op, "collection", "collection name %q must match [A-Za-z0-9_-]{1,128}", name)
	}
	cdir := filepath.Join(dir, name)
	rep := SalvageReport{Dir: cdir, DryRun: opts.DryRun}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	m, err := readMeta(cdir)
	if errors.Is(err, fs.ErrNotExist) {
		return rep, driver.Errorf(driver.CodeNotFound, op, "", "no collection in %s (no %s)", cdir, metaFile)
	}
	if err != nil {
		return rep, err
	}
	lock, err := os.OpenFile(filepath.Join(cdir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return rep, fmt.Errorf("chromem: open lock: %w", err)
	}
	defer lock.Close()
	if err := lockFor(op, lock); err != nil {
		return rep, err
	}
	rec, st, err := readCkptFile(cdir)
	if err != nil {
		return rep, err
	}
	var exts []extent
	if st == ckptOK {
		exts = rec.extents()
	}
	path := filepath.Join(cdir, logFile)
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		rep.LogMissing = true
		rep.Problem = corruptLog(cdir, "%s is missing, but %s exists", logFile, metaFile).Error()
		if st == ckptOK {
			rep.MissingBytes = max(rec.cur.size, 0)
		}
		return rep, writeSalvaged(ctx, cdir, nil, &rep, nil)
	case err != nil:
		return rep, fmt.Errorf("chromem: open log: %w", err)
	}
	defer f.Close()

	// Would it open? Then there is nothing to salvage.
	live := &liveSet{ctx: ctx, dim: m.Dimension, recs: make(map[string]driver.Record)}
	res, err := diagnose(cdir, f, exts, rec, nil, live.replay)
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	rep.LogBytes = res.size
	if err == nil {
		rep.Healthy, rep.Frames, rep.Records = true, res.frames, len(live.recs)
		return rep, nil
	}
	if driver.CodeOf(err) != driver.CodeCorrupt {
		return rep, err
	}
	rep.Problem = err.Error()

	live = &liveSet{ctx: ctx, dim: m.Dimension, recs: make(map[string]driver.Record)}
	satisfied, err := salvageScan(ctx, f, res.size, exts, live, &rep)
	if err != nil {
		return rep, err
	}
	if st == ckptOK && !satisfied {
		rep.MissingBytes = max(rec.cur.size-res.size, 0)
	}
	return rep, writeSalvaged(ctx, cdir, f, &rep, live)
}

// liveSet replays log entries into the records they leave.
type liveSet struct {
	ctx  context.Context
	dim  int
	recs map[string]driver.Record
}

// check rejects an entry that this collection could not have written.
func (l *liveSet) check(e entry) error {
	for i := range e.recs {
		if len(e.recs[i].Vector) != l.dim || e.recs[i].ID == "" {
			return driver.Errorf(driver.CodeCorrupt, "open", "", "log record %q has %d dimensions, collection %d", e.recs[i].ID, len(e.recs[i].Vector), l.dim)
		}
	}
	return nil
}

func (l *liveSet) apply(e entry) {
	for _, r := range e.recs {
		l.recs[r.ID] = r
	}
	for _, id := range e.ids {
		delete(l.recs, id)
	}
}

// replay is the apply function of scan.
func (l *liveSet) replay(e entry, _ int) error {
	if err := l.ctx.Err(); err != nil {
		return err
	}
	if err := l.check(e); err != nil {
		return err
	}
	l.apply(e)
	return nil
}

func (l *liveSet) sorted() []driver.Record {
	out := make([]driver.Record, 0, len(l.recs))
	for _, r := range l.recs {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b driver.Record) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// frameAt reads and decodes the frame at off, if a valid one starts there.
func frameAt(f *os.File, off, size int64) (entry, int64, [frameHeader]byte, bool, error) {
	var hdr [frameHeader]byte
	if size-off < frameHeader {
		return entry{}, 0, hdr, false, nil
	}
	if _, err := f.ReadAt(hdr[:], off); err != nil {
		return entry{}, 0, hdr, false, err
	}
	n := int64(binary.LittleEndian.Uint32(hdr[0:4]))
	if n == 0 || n > maxFrame || off+frameHeader+n > size {
		return entry{}, 0, hdr, false, nil
	}
	payload := make([]byte, n)
	if _, err := f.ReadAt(payload, off+frameHeader); err != nil {
		return entry{}, 0, hdr, false, err
	}
	if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(hdr[4:8]) {
		return entry{}, 0, hdr, false, nil
	}
	e, err := decodePayload(payload)
	if err != nil {
		return entry{}, 0, hdr, false, nil
	}
	return e, off + frameHeader + n, hdr, true, nil
}

// salvageScan replays every intact frame of f into live, skipping damaged
// ranges (recorded in rep) up to the next valid frame, and reports whether
// the frames read satisfy one of exts.
func salvageScan(ctx context.Context, f *os.File, size int64, exts []extent, live *liveSet, rep *SalvageReport) (bool, error) {
	satisfied := len(exts) == 0
	for _, x := range exts {
		satisfied = satisfied || x.size == 0
	}
	// good reads the frame at off into live if it is intact and fits the
	// collection, and returns its end.
	good := func(off int64) (int64, bool, error) {
		e, end, hdr, ok, err := frameAt(f, off, size)
		if err != nil || !ok || live.check(e) != nil {
			return 0, false, err
		}
		live.apply(e)
		rep.Frames++
		for _, x := range exts {
			if x.last == off && x.size == end && x.hdr == hdr {
				satisfied = true
			}
		}
		return end, true, nil
	}
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		end, ok, err := good(off)
		if err != nil {
			return false, err
		}
		if ok {
			off = end
			continue
		}
		// Resynchronise on the next offset where an intact frame starts,
		// and read it.
		resync, next := size, size
		for p := off + 1; p < size; {
			q, err := laterFrame(f, p, size)
			if err != nil {
				return false, err
			}
			if q < 0 {
				break
			}
			end, ok, err := good(q)
			if err != nil {
				return false, err
			}
			if ok {
				resync, next = q, end
				break
			}
			p = q + 1
		}
		rep.Damaged = append(rep.Damaged, Span{Offset: off, Bytes: resync - off})
		rep.DamagedBytes += resync - off
		off = next
	}
	rep.Records = len(live.recs)
	return satisfied, nil
}

// writeSalvaged replaces cdir's log by a clean one holding live's records
// (none if live is nil), keeping the old log (f, nil if there was none)
// beside it, unless rep.DryRun. Order: the clean log is written and
// fsynced and the checkpoint records it as pending (fsynced), the old log
// is hard-linked (or copied) aside, the clean log is renamed into place and
// the directory fsynced, and the checkpoint then records the clean log
// alone. A crash at any point leaves a log that Salvage can run on again.
func writeSalvaged(ctx context.Context, cdir string, f *os.File, rep *SalvageReport, live *liveSet) error {
	if live != nil {
		rep.Records = len(live.recs)
	}
	if rep.DryRun {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var recs []driver.Record
	if live != nil {
		recs = live.sorted()
	}
	ck, _, err := openCkpt(cdir)
	if err != nil {
		return err
	}
	defer ck.close()
	tmp, err := fsutil.WriteTemp(cdir, logFile, func(tf *os.File) error {
		_, err := writeCompacted(tf, recs, nil, encodeUpsertDocs, ck) // the records as logged, revisions and all
		return err
	}, fsutil.Options{Temp: logFile + ".salvage.tmp"})
	if err != nil {
		return fmt.Errorf("chromem: salvage: %w", err)
	}
	if f != nil {
		kept, err := keepLog(cdir, f)
		if err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("chromem: salvage: keep the damaged log: %w", err)
		}
		rep.KeptAs = kept
	}
	if err := os.Rename(tmp, filepath.Join(cdir, logFile)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("chromem: salvage: %w", err)
	}
	if err := syncDir(cdir); err != nil {
		return fmt.Errorf("chromem: salvage: the clean log is in place, but: %w", err)
	}
	return ck.reset(ck.rec.pend, true)
}

// keepLog gives the log f a second name, records.log.damaged-<time>, by a
// hard link (or, where links fail, a copy), durably, and returns it.
func keepLog(cdir string, f *os.File) (string, error) {
	base := filepath.Join(cdir, logFile+".damaged-"+time.Now().UTC().Format("20060102T150405Z"))
	for i := 0; i <= 1000; i++ {
		name := base
		if i > 0 {
			name += "." + strconv.Itoa(i)
		}
		err := os.Link(f.Name(), name)
		if err == nil {
			return name, syncDir(cdir)
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		st, serr := f.Stat()
		if serr != nil {
			return "", serr
		}
		return keepBytes(f, 0, st.Size(), name)
	}
	return "", fmt.Errorf("chromem: %s.*: too many kept logs", base)
}
