//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// openPTY opens a pseudo-terminal pair: the master (what a terminal
// emulator writes keystrokes to) and the slave (the process's terminal).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	var unlock int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); errno != 0 {
		t.Fatalf("unlockpt: %v", errno)
	}
	var n uint32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); errno != 0 {
		t.Fatalf("ptsname: %v", errno)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// TestPruneAsksOnATerminal: with a terminal on stdin, a prune of every run
// asks, and only "y" deletes.
func TestPruneAsksOnATerminal(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "once")
	a := fx.run(exitOK, `{"order": "A-1"}`).RunID
	fx.run(exitOK, `{"order": "B-2"}`)
	for _, tc := range []struct {
		answer, out string
		code        int
	}{
		{"\n", "", exitRunFailed},
		{"no\n", "", exitRunFailed},
		{"y\n", "pruned 2 runs and 0 blobs\n", exitOK},
	} {
		master, slave := openPTY(t)
		if _, err := master.WriteString(tc.answer); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		code := Main(context.Background(), []string{"runs", "prune", "--db", fx.db}, slave, &out, &errb)
		if code != tc.code || out.String() != tc.out || !strings.Contains(errb.String(), "Delete 2 runs, every finished run of "+fx.db+"? [y/N]") {
			t.Fatalf("answer %q: exit %d %q %s", tc.answer, code, out.String(), errb.String())
		}
		_, show, _ := fx.cli("runs", "show", a)
		if gone := show == ""; gone != (tc.code == exitOK) {
			t.Fatalf("answer %q: run %s gone=%v", tc.answer, a, gone)
		}
	}
}
