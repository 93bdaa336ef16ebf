//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptExits130 builds the binary, starts a run whose tool sleeps,
// sends SIGINT and expects a prompt exit with code 130 and the sleeping
// tool's process group gone.
func TestInterruptExits130(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "rein")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	started := filepath.Join(dir, "started")
	flow := "name: sleepy\ntools:\n  nap: {command: [\"sh\", \"-c\", \"touch " + started + "; sleep 30; echo {}\"], effect: none}\nsteps:\n  - {id: a, tool: nap, args: {}}\n"
	path := filepath.Join(dir, "flow.yaml")
	if err := os.WriteFile(path, []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", path, "--output", "json")
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the tool never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit: %v, want code 130", err)
	}
	if took := time.Since(sent); took > 5*time.Second {
		t.Fatalf("took %s to stop after SIGINT", took)
	}
	if !strings.Contains(stdout.String(), `"status": "cancelled"`) {
		t.Fatalf("result: %s", stdout.String())
	}
}
