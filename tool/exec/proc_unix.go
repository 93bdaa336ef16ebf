//go:build unix

package exec

import (
	"errors"
	"os"
	"syscall"
)

// killGroup sends SIGKILL to the process group led by p.
func killGroup(p *os.Process) error {
	err := syscall.Kill(-p.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
