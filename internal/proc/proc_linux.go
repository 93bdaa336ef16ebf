//go:build linux

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StartTime returns pid's start time in clock ticks since boot (field 22
// of /proc/PID/stat).
func StartTime(pid int) (uint64, error) {
	st, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	return st.start, nil
}

var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// BootID returns the id of this boot of the machine, "" when unknown.
func BootID() string { return bootID() }

// Stop finds the live members of process group pgid whose leader started
// at start (StartTime) during boot (BootID), kills them with SIGKILL, and
// waits up to wait for them to be gone. A group of another boot is Gone;
// one whose members cannot descend from that leader is Foreign and left
// alone. start 0 means unknown: nothing can be told apart, so a group with
// live members is Foreign.
func Stop(pgid int, start uint64, boot string, wait time.Duration) (Report, error) {
	if pgid <= 1 {
		return Report{}, fmt.Errorf("process group %d: not a tool's group", pgid)
	}
	if boot != "" && BootID() != "" && boot != BootID() {
		return Report{State: Gone}, nil // the machine restarted since
	}
	members, err := groupMembers(pgid)
	if err != nil {
		return Report{}, err
	}
	if len(members) == 0 {
		return Report{State: Gone}, nil
	}
	rep := Report{Found: len(members)}
	for _, m := range members {
		// the leader is the recorded one, and every other member started
		// after it (a descendant): anything else reused the id.
		if start == 0 || m.pid == pgid && m.start != start || m.start < start {
			rep.State = Foreign
			return rep, nil
		}
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return rep, fmt.Errorf("kill process group %d: %w", pgid, err)
	}
	deadline := time.Now().Add(wait)
	for {
		left, err := groupMembers(pgid)
		if err != nil {
			return rep, err
		}
		if len(left) == 0 {
			rep.State = Killed
			return rep, nil
		}
		if time.Now().After(deadline) {
			rep.State, rep.Left = Stuck, len(left)
			return rep, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Live lists the PIDs of the live processes of group pgid (zombies left
// out).
func Live(pgid int) ([]int, error) {
	members, err := groupMembers(pgid)
	pids := make([]int, len(members))
	for i, m := range members {
		pids[i] = m.pid
	}
	return pids, err
}

// stat is what rein reads of /proc/PID/stat.
type stat struct {
	pid   int
	state byte
	pgrp  int
	start uint64
}

func readStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	return parseStat(pid, b)
}

// parseStat reads fields 3 (state), 5 (pgrp) and 22 (starttime); the
// command name (field 2) may hold spaces and parentheses, so fields are
// counted from the last ')'.
func parseStat(pid int, b []byte) (stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return stat{}, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want 20 or more", pid, len(f))
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return stat{}, fmt.Errorf("/proc/%d/stat: pgrp %q: %w", pid, f[2], err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return stat{}, fmt.Errorf("/proc/%d/stat: starttime %q: %w", pid, f[19], err)
	}
	return stat{pid: pid, state: f[0][0], pgrp: pgrp, start: start}, nil
}

// groupMembers lists the live processes of group pgid (zombies and dead
// ones left out).
func groupMembers(pgid int) ([]stat, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	var out []stat
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue // it exited meanwhile
		}
		if st.pgrp == pgid && st.state != 'Z' && st.state != 'X' {
			out = append(out, st)
		}
	}
	return out, nil
}
