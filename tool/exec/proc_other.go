//go:build !unix

package exec

import (
	"os"
	"os/exec"
)

// isolate does nothing where process groups are not available.
func isolate(*exec.Cmd) {}

// killGroup kills only p where process groups are not available.
func killGroup(p *os.Process) error { return p.Kill() }
