//go:build linux || openbsd || dragonfly || solaris || darwin || freebsd || netbsd

package filesystem

import (
	"os"
	"syscall"
)

// sysID fills in the inode, device and status-change time of fi.
func sysID(fi os.FileInfo, id *fileID) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	id.dev, id.ino = uint64(st.Dev), uint64(st.Ino)
	id.ctime = statusChange(st)
}
