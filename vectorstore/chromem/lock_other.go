//go:build !unix

package chromem

import "os"

// lockFile is a no-op where flock is unavailable: the caller must not open
// one collection from two processes at once.
func lockFile(*os.File) error { return nil }

func lockFor(string, *os.File) error { return nil }
