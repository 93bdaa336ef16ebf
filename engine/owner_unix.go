//go:build unix

package engine

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

// processGone reports whether no process has this PID (kill 0 says ESRCH).
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// pidNamespace is the inode of this process's PID namespace ("" where
// /proc does not tell, and then no lease is ever taken over early).
func pidNamespace() string {
	fi, err := os.Stat("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return strconv.FormatUint(st.Ino, 10)
}
