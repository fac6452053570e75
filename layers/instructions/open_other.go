//go:build !unix

package instructions

import "os"

// openFlags: the platform has no O_NONBLOCK; the stat before the open
// refuses special files.
const openFlags = os.O_RDONLY
