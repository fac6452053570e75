// Package fsutil holds the helpers strata's stores share for files on
// disk: atomic write, directory sync, file locks, and path containment.
//
// An atomic write (WriteFile, or WriteTemp then Commit) fills a temporary
// file in the target's directory, fsyncs and closes it, renames it over
// the target and fsyncs the directory: a crash leaves the old content or
// the new, never a torn file, and once it returns the new content survives
// a crash of the machine.
//
// A file lock (TryLock, LockWait) is an exclusive advisory flock on an
// open file, held until that file is closed (or its process exits). It
// excludes other open file descriptions: other processes, and other opens
// in this one. WriteHolder and Holder record in the lock file which process
// holds it, as information only, so an open that finds the lock taken can
// name its holder.
package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Options configure an atomic write.
type Options struct {
	// Temp names the temporary file in the target's directory. A name
	// with a "*" is a pattern, as for os.CreateTemp: each write gets a
	// file of its own, for writers that may race. A name without one is
	// used as it is, created or truncated, for a writer that holds a
	// lock: a crash then leaves one leftover, which the next write
	// overwrites. Empty means "." + the target's base name + ".*.tmp".
	// Temporary files are created with mode 0o600.
	Temp string
	// NoSync skips the fsync of the file and of the directory: the write
	// is still atomic, and survives a crash of the process but not of the
	// machine.
	NoSync bool
}

// WriteFile replaces path with data atomically and durably: WriteTemp in
// path's directory, then Commit.
func WriteFile(path string, data []byte, opts Options) error {
	tmp, err := WriteTemp(filepath.Dir(path), filepath.Base(path), func(f *os.File) error {
		_, err := f.Write(data)
		return err
	}, opts)
	if err != nil {
		return err
	}
	_, err = Commit(tmp, path, opts)
	return err
}

// WriteTemp creates the temporary file for a write of name in dir (named
// by opts.Temp), fills it with fill, fsyncs it (unless opts.NoSync) and
// closes it, and returns its path. On error the file is removed.
func WriteTemp(dir, name string, fill func(*os.File) error, opts Options) (string, error) {
	pattern := opts.Temp
	if pattern == "" {
		pattern = "." + name + ".*.tmp"
	}
	var f *os.File
	var err error
	if strings.Contains(pattern, "*") {
		f, err = os.CreateTemp(dir, pattern)
	} else {
		f, err = os.OpenFile(filepath.Join(dir, pattern), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	}
	if err != nil {
		return "", err
	}
	err = fill(f)
	if err == nil && !opts.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// Commit renames the complete temporary file tmp over path and fsyncs
// path's directory (unless opts.NoSync). If the rename fails, tmp is
// removed. renamed reports whether the rename happened: then the new file
// is in place even if err reports the failed directory sync, which puts
// only its durability in doubt.
func Commit(tmp, path string, opts Options) (renamed bool, err error) {
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return false, err
	}
	if opts.NoSync {
		return true, nil
	}
	return true, SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs the directory dir, which makes the renames, links,
// creations and removals of names in it durable. A platform or file
// system that cannot sync a directory (an error matching
// errors.ErrUnsupported or fs.ErrInvalid) is not an error: there is
// nothing more to do.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, fs.ErrInvalid) {
		err = nil
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// Escapes reports whether name, under root, resolves through symbolic
// links to a place outside root. It is false when root or root/name
// cannot be resolved (does not exist, say): it classifies an error that
// something confining access (os.Root) already returned, and does not
// itself confine anything.
func Escapes(root, name string) bool {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false
	}
	target, err := filepath.EvalSymlinks(filepath.Join(root, name))
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(realRoot, target)
	return err != nil || !filepath.IsLocal(rel)
}
