//go:build linux

package exec

import (
	"os/exec"
	"runtime"
	"syscall"
)

// isolate puts the command in a process group of its own, so that killing
// the group reaches every process the command spawned, and has Linux kill
// the command (SIGKILL) when rein dies: a tool never runs on unobserved
// after a crash. What the command spawned stays in its group, which a
// resume finds and kills (the engine records the group; see tool.Process).
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// pinThread locks the calling goroutine to its OS thread until the
// returned function runs. Linux sends the parent-death signal when the
// thread that forked the child exits, not the process (go.dev/issue/27505),
// and the Go runtime ends a thread whose locked goroutine exits: unpinned,
// another goroutine could lock the forking thread, exit, and kill the tool
// in mid-call. Pinned from before Start until after Wait, the thread
// outlives the child.
func pinThread() (unpin func()) {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
