//go:build unix

package exec

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// isolate puts the command in a process group of its own, so that killing
// the group reaches every process the command spawned.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup sends SIGKILL to the process group led by p.
func killGroup(p *os.Process) error {
	err := syscall.Kill(-p.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
