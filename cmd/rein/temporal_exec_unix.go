//go:build unix

package main

import (
	"os"
	"syscall"
)

// execTemporal replaces this process with prog (its args after it), so
// that the process a user started, and may signal or kill, is the one
// doing the work: a worker killed with kill -9 is gone, not a parent
// whose child goes on. It returns only when the exec failed.
func execTemporal(prog string, args []string) error {
	return syscall.Exec(prog, append([]string{prog}, args...), os.Environ())
}
