//go:build darwin || freebsd || netbsd

package filesystem

import (
	"syscall"
	"time"
)

// statusChange is the status-change time of st, which these systems name
// Ctimespec.
func statusChange(st *syscall.Stat_t) time.Time { return time.Unix(st.Ctimespec.Unix()) }
