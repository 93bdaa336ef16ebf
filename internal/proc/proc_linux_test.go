//go:build linux

package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startGroup starts a shell in a group of its own that spawns a child and
// waits; it returns the group id once the child's pid is written.
func startGroup(t *testing.T) (pgid, child int) {
	t.Helper()
	pidfile := filepath.Join(t.TempDir(), "child")
	cmd := exec.Command("/bin/sh", "-c", `sleep 60 & echo $! > "$1.tmp"; mv "$1.tmp" "$1"; wait`, "sh", pidfile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pidfile); err == nil {
			child, err = strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return cmd.Process.Pid, child
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell never wrote its child's pid")
		}
	}
}

func TestStopKillsTheRecordedGroup(t *testing.T) {
	t.Parallel()
	pgid, child := startGroup(t)
	start, err := StartTime(pgid)
	if err != nil || start == 0 {
		t.Fatalf("StartTime = %d, %v", start, err)
	}
	if live, err := Live(pgid); err != nil || len(live) != 2 {
		t.Fatalf("Live = %v, %v; want the shell and its child", live, err)
	}
	// A leader that started at another time is another group: left alone.
	if rep, err := Stop(pgid, start+1, BootID(), DefaultWait); err != nil || rep.State != Foreign || rep.Found != 2 {
		t.Fatalf("Stop with another start time = %+v, %v; want foreign", rep, err)
	}
	if rep, err := Stop(pgid, 0, BootID(), DefaultWait); err != nil || rep.State != Foreign {
		t.Fatalf("Stop with no start time = %+v, %v; want foreign", rep, err)
	}
	// Another boot's group cannot run any more.
	if rep, err := Stop(pgid, start, "another-boot", DefaultWait); err != nil || rep.State != Gone {
		t.Fatalf("Stop of another boot = %+v, %v; want gone", rep, err)
	}
	// The leader gone, its child is still the recorded group's.
	if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if live, _ := Live(pgid); len(live) == 1 && live[0] == child {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader did not die")
		}
	}
	rep, err := Stop(pgid, start, BootID(), DefaultWait)
	if err != nil || rep.State != Killed || rep.Found != 1 {
		t.Fatalf("Stop = %+v, %v; want killed, 1 found", rep, err)
	}
	if live, _ := Live(pgid); len(live) != 0 {
		t.Fatalf("after Stop the group still has %v", live)
	}
	if rep, err := Stop(pgid, start, BootID(), DefaultWait); err != nil || rep.State != Gone {
		t.Fatalf("Stop again = %+v, %v; want gone", rep, err)
	}
}

func TestParseStat(t *testing.T) {
	t.Parallel()
	// a command name with spaces and parentheses.
	line := "42 (a) (b c) S 1 40 40 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 200\n"
	st, err := parseStat(42, []byte(line))
	if err != nil || st.state != 'S' || st.pgrp != 40 || st.start != 98765 {
		t.Fatalf("parseStat = %+v, %v", st, err)
	}
	if _, err := parseStat(42, []byte("42 (x) S 1")); err == nil || !strings.Contains(err.Error(), "/proc/42/stat") {
		t.Fatalf("short stat: %v", err)
	}
}
