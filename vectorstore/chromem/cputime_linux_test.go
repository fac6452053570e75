package chromem

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time the calling OS thread has used, so that a
// benchmark on a shared machine can report its own work apart from the
// time it waited for a core. The caller locks its goroutine to the thread.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// processCPU is the CPU time the whole process has used (every thread: a
// query's worker goroutines, and the garbage collector's).
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
