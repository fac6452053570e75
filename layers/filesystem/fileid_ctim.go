//go:build linux || openbsd || dragonfly || solaris

package filesystem

import (
	"syscall"
	"time"
)

// statusChange is the status-change time of st, which these systems name
// Ctim.
func statusChange(st *syscall.Stat_t) time.Time { return time.Unix(st.Ctim.Unix()) }
