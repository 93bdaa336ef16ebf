//go:build linux

package exec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/proc"
	"github.com/reinhq/rein/tool"
)

// writeScript writes an executable /bin/sh script under dir and returns its path.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(path, "#!/bin/sh\n"+body+"\n", 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// scriptTool builds a tool running body as a shell script in a fresh folder.
func scriptTool(t *testing.T, body string, edit func(*Config)) *Tool {
	t.Helper()
	dir := t.TempDir()
	writeScript(t, dir, "tool.sh", body)
	cfg := Config{Name: "t", Command: []string{"./tool.sh"}, Dir: dir, Effect: tool.EffectNone}
	if edit != nil {
		edit(&cfg)
	}
	tl, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// readPID reads the pid a script wrote into path, waiting for it up to a
// minute (a bound for a hung script, not a speed the test counts on).
func readPID(t *testing.T, path string) int {
	t.Helper()
	if !waitFile(path, time.Minute) {
		t.Fatalf("no pid in %s", path)
	}
	data, _ := os.ReadFile(path)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("pid file %s: %v", path, err)
	}
	return pid
}

// waitFile reports whether path holds a whole line within d.
// (d 0: looks once).
func waitFile(path string, d time.Duration) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if data, err := os.ReadFile(path); err == nil && bytes.HasSuffix(data, []byte("\n")) {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
	}
}

// waitGroupGone fails the test unless process group pgid has no live
// member within ten seconds.
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		live, err := proc.Live(pgid)
		if err != nil {
			t.Fatal(err)
		}
		if len(live) == 0 {
			return
		}
	}
	t.Errorf("process group %d still has live members after the call returned", pgid)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// processGone reports whether pid no longer runs (a zombie waiting for a
// reaper counts as gone: it runs no code).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
}

// waitGone fails the test unless pid is gone within ten seconds.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if processGone(pid) {
			return
		}
	}
	t.Errorf("process %d still runs after the call returned", pid)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// writeFile writes data to path and gives it mode (which os.WriteFile
// leaves alone on an existing file).
//
// No child is forked while the file is open for writing: a child forked by
// a parallel test would hold the descriptor until its own exec, and an
// exec of this file meanwhile fails with "text file busy" (ETXTBSY,
// go.dev/issue/22315; seen in CI). Forks take syscall.ForkLock for writing.
func writeFile(path, data string, mode os.FileMode) error {
	syscall.ForkLock.RLock()
	err := os.WriteFile(path, []byte(data), mode)
	syscall.ForkLock.RUnlock()
	if err != nil {
		return err
	}
	return os.Chmod(path, mode)
}
