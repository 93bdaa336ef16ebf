//go:build unix && !linux

package exec

import (
	"os/exec"
	"syscall"
)

// isolate puts the command in a process group of its own, so that killing
// the group reaches every process the command spawned. There is no
// parent-death signal outside Linux: a tool can outlive a rein that was
// killed.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// pinThread does nothing without a parent-death signal.
func pinThread() (unpin func()) { return func() {} }
