package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestTemporalHandOff: a command line with --temporal is run by the
// rein-temporal program (REIN_TEMPORAL here: a real script that prints
// its arguments and exits 3), unchanged, with its exit code; without the
// program, rein says how to get it and exits 2.
func TestTemporalHandOff(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "rein-temporal")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho \"args: $*\"\nexit 3\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("REIN_TEMPORAL", prog)
	var out, errb bytes.Buffer
	args := []string{"run", "examples/resume-screen", "--temporal", "127.0.0.1:7233"}
	if code := Main(context.Background(), args, strings.NewReader(""), &out, &errb); code != 3 {
		t.Fatalf("exit %d, want 3 (stderr %q)", code, errb.String())
	}
	if got := strings.TrimSpace(out.String()); got != "args: "+strings.Join(args, " ") {
		t.Errorf("rein-temporal got %q", got)
	}

	t.Setenv("REIN_TEMPORAL", "")
	t.Setenv("PATH", dir+"/nothing-here")
	out.Reset()
	errb.Reset()
	if code := Main(context.Background(), []string{"worker", "--temporal=x:1", "."}, strings.NewReader(""), &out, &errb); code != exitUsage {
		t.Fatalf("exit %d without rein-temporal, want %d", code, exitUsage)
	}
	if !strings.Contains(errb.String(), "go install github.com/reinhq/rein/temporal/cmd/rein-temporal") {
		t.Errorf("stderr %q does not say how to install rein-temporal", errb.String())
	}
	if wantsTemporal([]string{"run", ".", "--", "--temporal"}) {
		t.Error("--temporal after -- was taken as rein's")
	}
}

// TestTemporalIsTheProcess: the rein program becomes rein-temporal (a
// real script here, printing its pid and arguments) rather than running
// it as a child: the pid a user started, and kills with kill -9 to stop
// a worker, is the one doing the work.
func TestTemporalIsTheProcess(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("rein runs rein-temporal as its child on Windows")
	}
	bin, err := reinBinary()
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(t.TempDir(), "rein-temporal")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho \"$$ $*\"\nexit 3\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "worker", "--temporal", "127.0.0.1:7233", "examples/")
	cmd.Env = append(os.Environ(), "REIN_TEMPORAL="+prog)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit: %v, want 3\n%s", err, out)
	}
	want := fmt.Sprintf("%d worker --temporal 127.0.0.1:7233 examples/", cmd.Process.Pid)
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("rein-temporal printed %q, want %q (rein's own pid)", got, want)
	}
}
