//go:build unix

package engine

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// processGone reports whether no process has this PID (kill 0 says ESRCH).
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// pidNamespace is the inode of this process's PID namespace ("" where
// /proc does not tell, and then no lease is ever taken over early).
// It is read once: a process never changes its own PID namespace.
var pidNamespace = sync.OnceValue(func() string {
	fi, err := os.Stat("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return strconv.FormatUint(st.Ino, 10)
})
