//go:build unix

package instructions

import (
	"os"
	"syscall"
)

// openFlags opens files without blocking: a FIFO (or device) swapped in
// between the stat and the open must not hang the hook until its timeout
// and leave its goroutine stuck. Regular files ignore O_NONBLOCK.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
