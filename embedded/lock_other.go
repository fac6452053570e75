//go:build !unix

package embedded

import "os"

// tryLock is a no-op where flock is unavailable: two processes opening one
// directory at once are then told apart only by the exclusive creation of
// strata.json (and the records collection's own lock, where it has one).
func tryLock(*os.File) (bool, error) { return true, nil }
