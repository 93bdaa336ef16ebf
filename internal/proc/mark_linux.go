//go:build linux

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var subreaper = sync.OnceValue(func() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return nil
})

// Subreaper makes this process the child subreaper of its descendants
// (Linux's PR_SET_CHILD_SUBREAPER), once: a process whose parent exits
// (a tool's grandchild that called setsid, whose parent was killed) is
// reparented to this process instead of init, so it stays this process's
// to find, kill and reap (StopMarked). It lasts for the process's life.
func Subreaper() error { return subreaper() }

// StopMarked kills with SIGKILL every live process whose environment
// holds the entry mark ("NAME=VALUE", exactly), wherever its group or
// session, and repeats until none is left (one that forked meanwhile
// passed the mark on) or wait ran out; it reaps those that are this
// process's children (Subreaper made them so). Only processes of this
// user are readable, so only they are found. A process that cleared its
// environment, or one already gone to a zombie, is not found.
func StopMarked(mark string, wait time.Duration) (Report, error) {
	return StopMarkedBelow(0, mark, wait)
}

// StopMarkedBelow is StopMarked among the descendants of process root
// alone (0: every process), found through /proc/PID/task/TID/children:
// for a subreaper (Subreaper), whose orphaned descendants stay its own,
// StopMarkedBelow(os.Getpid(), …) finds what StopMarked finds, reading a
// few files instead of every process's.
func StopMarkedBelow(root int, mark string, wait time.Duration) (Report, error) {
	if mark == "" {
		return Report{}, errors.New("stop marked processes: an empty mark would match everything")
	}
	var rep Report
	deadline := time.Now().Add(wait)
	children := map[int]bool{} // killed children of this process, not yet reaped
	defer func() { reap(children, deadline) }()
	for {
		pids, err := marked([]byte(mark), root)
		if err != nil {
			return rep, err
		}
		if len(pids) == 0 {
			if rep.Found == 0 {
				rep.State = Gone
			} else {
				rep.State = Killed
			}
			return rep, nil
		}
		if rep.Found == 0 {
			rep.Found = len(pids)
		}
		if time.Now().After(deadline) {
			rep.State, rep.Left = Stuck, len(pids)
			return rep, nil
		}
		self := os.Getpid()
		for _, pid := range pids {
			if ppid, err := parentOf(pid); err == nil && ppid == self {
				children[pid] = true
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		reap(children, time.Time{})
		time.Sleep(5 * time.Millisecond)
	}
}

// reap waits for the killed children, so none stays a zombie, polling
// until all are reaped or until (zero: one pass).
func reap(children map[int]bool, until time.Time) {
	for {
		for pid := range children {
			var ws syscall.WaitStatus
			n, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			if n == pid || errors.Is(err, syscall.ECHILD) {
				delete(children, pid)
			}
		}
		if len(children) == 0 || !time.Now().Before(until) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// parentOf is pid's parent (field 4 of /proc/PID/stat).
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	return strconv.Atoi(string(f[1]))
}

// marked lists the live processes whose environment holds mark: among
// the descendants of root, or every process when root is 0.
func marked(mark []byte, root int) ([]int, error) {
	var candidates []int
	if root > 0 {
		candidates = descendants(root)
	} else {
		d, err := os.Open("/proc")
		if err != nil {
			return nil, err
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			return nil, fmt.Errorf("list /proc: %w", err)
		}
		for _, name := range names {
			if pid, err := strconv.Atoi(name); err == nil {
				candidates = append(candidates, pid)
			}
		}
	}
	self := os.Getpid()
	var out []int
	for _, pid := range candidates {
		if pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil || len(env) == 0 {
			continue // gone, a zombie, or another user's
		}
		for entry := range bytes.SplitSeq(env, []byte{0}) {
			if bytes.Equal(entry, mark) {
				out = append(out, pid)
				break
			}
		}
	}
	return out, nil
}

// descendants lists the processes below root (children of any of its
// threads, and theirs), as /proc shows them now.
func descendants(root int) []int {
	var out []int
	seen := map[int]bool{root: true}
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(p) + "/task")
		for _, task := range tasks {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/task/" + task.Name() + "/children")
			if err != nil {
				continue
			}
			for f := range bytes.FieldsSeq(b) {
				if c, err := strconv.Atoi(string(f)); err == nil && !seen[c] {
					seen[c] = true
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}
