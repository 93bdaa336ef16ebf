//go:build !unix

package exec

import (
	"os"
	"os/exec"
)

// isolate does nothing where process groups are not available.
func isolate(*exec.Cmd) {}

// pinThread does nothing without a parent-death signal.
func pinThread() (unpin func()) { return func() {} }

// killGroup kills only p where process groups are not available.
func killGroup(p *os.Process) error { return p.Kill() }
