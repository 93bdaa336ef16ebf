// Package proc finds and stops what is left of a process group that a dead
// process started: it reads a process's start time and the boot's id, which
// together tell a group apart from a later one that reuses its id, lists a
// group's live members, and kills a group until it is gone.
//
// It reads Linux's /proc. Elsewhere StartTime and Stop return
// errors.ErrUnsupported and BootID returns "": callers then say that they
// could not tell, and kill nothing.
package proc

import "time"

// State is what Stop found of a group.
type State string

// States of a group.
const (
	// Gone: no live process is left in the group (zombies count as gone:
	// they run no code).
	Gone State = "gone"
	// Killed: live members were found, killed with SIGKILL, and are gone.
	Killed State = "killed"
	// Stuck: live members were killed but some were still there when
	// Stop gave up waiting (a process in uninterruptible sleep).
	Stuck State = "stuck"
	// Foreign: the group's id now belongs to processes that started
	// before the recorded leader, or to a leader that is not the recorded
	// one: the id was reused, and nothing was killed.
	Foreign State = "foreign"
)

// Report is what Stop found and did.
type Report struct {
	State State
	// Found is how many live members the group had when Stop looked.
	Found int
	// Left is how many were still live when Stop returned (Stuck).
	Left int
}

// DefaultWait is how long Stop waits for a killed group to be gone.
const DefaultWait = 5 * time.Second
