//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/proc"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/trace"
)

// slowTool is an exec tool's script: it logs its call, and the first time
// it starts a child in its group, writes the child's and its own pid, and
// waits for the child; later calls answer at once.
const slowTool = `echo "$REIN_STEP_ID" >> calls.log
if [ ! -e once ]; then
  : > once
  sleep 60 &
  echo $! > child.tmp && mv child.tmp child.pid
  echo $$ > leader.tmp && mv leader.tmp leader.pid
  wait
fi
echo '{"sent": true}'
`

// procFixture is a flow folder whose step send runs slowTool, a run store,
// and the rein binary.
type procFixture struct {
	t        *testing.T
	bin, dir string
	db       string
}

func newProcFixture(t *testing.T, idempotent bool) *procFixture {
	t.Helper()
	bin, err := reinBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	flow := `name: slow
steps:
  - {id: prep, tool: quick, args: {}}
  - {id: send, tool: slow, args: {}}
tools:
  quick: {command: ["sh", "-c", "echo prep >> calls.log; echo '{}'"], effect: write}
  slow: {command: ["sh", "./slow.sh"], effect: external, idempotent: ` + strconv.FormatBool(idempotent) + `}
`
	for name, body := range map[string]string{"flow.yaml": flow, "slow.sh": slowTool} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &procFixture{t: t, bin: bin, dir: dir, db: filepath.Join(dir, "rein.db")}
}

// start starts the rein binary with args; its output goes to the buffers.
func (f *procFixture) start(args ...string) (cmd *exec.Cmd, stdout, stderr *bytes.Buffer) {
	f.t.Helper()
	cmd = exec.Command(f.bin, args...)
	cmd.Dir = f.dir
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, stdout, stderr
}

// pid waits for the tool to write a pid file (a minute bounds a hung tool;
// no speed is counted on).
func (f *procFixture) pid(name string) int {
	f.t.Helper()
	path := filepath.Join(f.dir, name)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				f.t.Fatalf("%s: %v", name, err)
			}
			return pid
		}
	}
	f.t.Fatalf("the tool never wrote %s", name)
	return 0
}

// cli runs rein in-process against the fixture's store.
func (f *procFixture) cli(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(context.Background(), append(args, "--db", f.db), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func (f *procFixture) calls() string {
	b, _ := os.ReadFile(filepath.Join(f.dir, "calls.log"))
	return string(b)
}

// stored reads a run's row.
func (f *procFixture) stored(id string) *store.Run {
	f.t.Helper()
	st, err := sqlite.Open(context.Background(), f.db, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	defer st.Close()
	run, err := st.GetRun(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return run
}

// exitCodeOf waits for cmd and returns its exit code.
func exitCodeOf(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

// waitNoLive fails the test unless process group pgid has no live member
// within ten seconds.
func waitNoLive(t *testing.T, pgid int, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if live, err := proc.Live(pgid); err == nil && len(live) == 0 {
			return
		}
	}
	live, _ := proc.Live(pgid)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	t.Fatalf("%s: process group %d still has %v", what, pgid, live)
}

// TestInterruptLeavesTheRunResumable: Ctrl-C on rein run stops the process,
// not the run. It exits 130, names the run and the command that resumes it,
// kills the tool's process group, and leaves the run running with its
// lease released; a resume then parks the non-idempotent step whose effect
// began as unknown (it is not run again), and settling it finishes the run.
func TestInterruptLeavesTheRunResumable(t *testing.T) {
	t.Parallel()
	f := newProcFixture(t, false)
	cmd, stdout, stderr := f.start("run", f.dir, "--db", f.db, "--output", "json")
	leader := f.pid("leader.pid")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := exitCodeOf(t, cmd); code != exitInterrupted {
		t.Fatalf("exit %d, want 130\n%s", code, stderr)
	}
	var res durableResult
	decodeOne(t, stdout.String(), &res)
	if res.Status != string(trace.RunRunning) || !strings.Contains(stdout.String(), `"interrupted": true`) {
		t.Fatalf("result: %s", stdout)
	}
	for _, want := range []string{"interrupted by SIGINT", "run " + res.RunID + " stopped and stays resumable",
		"step send was running", "rein runs resume " + res.RunID + " --db ", "rein runs cancel " + res.RunID} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	waitNoLive(t, leader, "after the interrupt")
	if run := f.stored(res.RunID); run.Status != trace.RunRunning || run.LeaseOwner != "" {
		t.Fatalf("stored run %s, lease %q; want running and released", run.Status, run.LeaseOwner)
	}

	code, out, errs := f.cli("runs", "resume", res.RunID, "-o", "json")
	if code != exitWaiting {
		t.Fatalf("resume: exit %d, want 3\n%s\n%s", code, out, errs)
	}
	var resumed durableResult
	decodeOne(t, out, &resumed)
	if len(resumed.Pending) != 1 || resumed.Pending[0].StepID != "send" || resumed.Pending[0].Kind != string(store.KindUnknown) {
		t.Fatalf("pending after resume: %+v", resumed.Pending)
	}
	if msg := resumed.Pending[0].Message; !strings.Contains(msg, "No tool process of the stopped process was left running") {
		t.Errorf("the unknown step's question does not say what was found of its tool: %s", msg)
	}
	if got := f.calls(); got != "prep\nsend\n" {
		t.Fatalf("calls %q: a settled step or the step whose effect began ran again", got)
	}
	if code, out, errs := f.cli("runs", "settle", res.RunID, "send", "--output", `{"sent": true}`); code != exitOK {
		t.Fatalf("settle: exit %d\n%s\n%s", code, out, errs)
	}
	if run := f.stored(res.RunID); run.Status != trace.RunSucceeded {
		t.Fatalf("after settling: %s", run.Status)
	}
}

// TestCancelOnInterrupt: with --cancel-on-interrupt, Ctrl-C cancels the run
// (exit 5).
func TestCancelOnInterrupt(t *testing.T) {
	t.Parallel()
	f := newProcFixture(t, false)
	cmd, stdout, stderr := f.start("run", f.dir, "--db", f.db, "--output", "json", "--cancel-on-interrupt")
	leader := f.pid("leader.pid")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := exitCodeOf(t, cmd); code != exitCancelled {
		t.Fatalf("exit %d, want 5\n%s", code, stderr)
	}
	var res durableResult
	decodeOne(t, stdout.String(), &res)
	if res.Status != string(trace.RunCancelled) || !strings.Contains(stderr.String(), "run "+res.RunID+" cancelled") {
		t.Fatalf("result %s\nstderr %s", stdout, stderr)
	}
	waitNoLive(t, leader, "after the interrupt")
	if run := f.stored(res.RunID); run.Status != trace.RunCancelled {
		t.Fatalf("stored run %s, want cancelled", run.Status)
	}
}

// TestSecondInterruptCancels: the first SIGINT ends the command's context
// with an interrupt, which a second SIGINT marks; a run stopped by such an
// interrupt is cancelled (exit 5), not left resumable.
func TestSecondInterruptCancels(t *testing.T) {
	// not parallel: it signals the test process itself.
	ctx, stop := notifyInterrupts(context.Background())
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("SIGINT did not end the context")
	}
	in := interruptOf(ctx)
	if in == nil || in.sig != os.Interrupt || in.again.Load() {
		t.Fatalf("cause %v, want a first SIGINT", context.Cause(ctx))
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !in.again.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second SIGINT was not counted")
		}
	}

	// A run interrupted twice: the run is cancelled, and rein exits 5.
	f := newProcFixture(t, false)
	rctx, cancel := context.WithCancelCause(context.Background())
	var out, errb bytes.Buffer
	codec := make(chan int, 1)
	go func() {
		codec <- Main(rctx, []string{"run", f.dir, "--db", f.db, "-o", "json"}, strings.NewReader(""), &out, &errb)
	}()
	leader := f.pid("leader.pid")
	cancel(in)
	if code := <-codec; code != exitCancelled {
		t.Fatalf("exit %d, want 5\n%s", code, errb.String())
	}
	var res durableResult
	decodeOne(t, out.String(), &res)
	if res.Status != string(trace.RunCancelled) || !strings.Contains(errb.String(), "interrupted twice") {
		t.Fatalf("result %s\nstderr %s", out.String(), errb.String())
	}
	waitNoLive(t, leader, "after the interrupt")
}

// TestWorkerStopsOnSIGTERM: rein worker exits 0 on SIGTERM, and the run it
// was advancing is left, lease released, for another worker, which
// finishes it (the tool is idempotent: it runs again with the same key).
func TestWorkerStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	f := newProcFixture(t, true)
	code, out, errs := f.cli("run", f.dir, "--detach")
	if code != exitOK {
		t.Fatalf("run --detach: exit %d %s", code, errs)
	}
	id := strings.TrimSpace(out)
	cmd, _, stderr := f.start("worker", "--db", f.db, "--poll", "20ms", "--grace", "0s")
	f.pid("leader.pid")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCodeOf(t, cmd); code != exitOK {
		t.Fatalf("worker exit %d after SIGTERM, want 0\n%s", code, stderr)
	}
	if run := f.stored(id); run.Status != trace.RunRunning || run.LeaseOwner != "" {
		t.Fatalf("stored run %s, lease %q; want running and released", run.Status, run.LeaseOwner)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	codec := make(chan int, 1)
	var werr bytes.Buffer
	go func() {
		codec <- Main(ctx, []string{"worker", "--db", f.db, "--poll", "20ms"}, strings.NewReader(""), &bytes.Buffer{}, &werr)
	}()
	for deadline := time.Now().Add(time.Minute); f.stored(id).Status != trace.RunSucceeded; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cancel()
			<-codec
			t.Fatalf("the second worker did not finish the run\n%s", werr.String())
		}
	}
	cancel()
	<-codec
	if got := f.calls(); got != "prep\nsend\nsend\n" {
		t.Fatalf("calls %q", got)
	}
}

// TestKilledReinLeavesNoToolRunning: kill -9 of rein during a long exec
// tool. The tool's own process dies with rein (the parent-death signal);
// the child it spawned is still in its group, and rein runs resume kills
// it as it opens the store, before it parks the step as unknown, whose
// question then finds nothing left running.
func TestKilledReinLeavesNoToolRunning(t *testing.T) {
	t.Parallel()
	f := newProcFixture(t, false)
	cmd, _, stderr := f.start("run", f.dir, "--db", f.db, "-o", "json")
	leader, child := f.pid("leader.pid"), f.pid("child.pid")
	id := f.waitProcessRecorded()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for deadline := time.Now().Add(10 * time.Second); processLive(leader); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-leader, syscall.SIGKILL)
			t.Fatalf("the tool (pid %d) outlived rein\n%s", leader, stderr)
		}
	}
	if live, _ := proc.Live(leader); len(live) != 1 || live[0] != child {
		t.Fatalf("group %d holds %v; want only the tool's child %d, which the resume must stop", leader, live, child)
	}
	code, out, errs := f.cli("runs", "resume", id, "-o", "json")
	if code != exitWaiting {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errs)
	}
	var res durableResult
	decodeOne(t, out, &res)
	want := "No tool process of the stopped process was left running"
	if len(res.Pending) != 1 || res.Pending[0].Kind != string(store.KindUnknown) || !strings.Contains(res.Pending[0].Message, want) {
		t.Fatalf("pending %+v; want step send unknown, saying %q", res.Pending, want)
	}
	waitNoLive(t, leader, "after the resume")
	if got := f.calls(); got != "prep\nsend\n" {
		t.Fatalf("calls %q", got)
	}
}

// waitProcessRecorded waits until the only run of the store journaled its
// tool's process group, and returns the run's id.
func (f *procFixture) waitProcessRecorded() string {
	f.t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, f.db, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	defer st.Close()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		runs, err := st.ListRuns(ctx, &store.ListRunsParams{})
		if err != nil || len(runs) != 1 {
			continue
		}
		evs, err := st.Events(ctx, runs[0].ID, 0, -1)
		if err != nil {
			continue
		}
		for _, e := range evs {
			if e.Kind == trace.ToolProcess {
				return runs[0].ID
			}
		}
	}
	f.t.Fatal("the tool's process group was never journaled")
	return ""
}

// processLive reports whether pid runs (a zombie does not: it runs no code).
func processLive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// TestAnyCommandStopsAKilledReinsGrandchildren: kill -9 of rein while an
// idempotent exec tool runs. The tool dies with rein, but the grandchild
// it started (testdata/procs/grandchild.sh) is still alive in its group;
// the next rein command that opens the store — here rein runs list, not a
// resume — kills it before it does anything else, so the grandchild never
// writes its file, even once told to.
func TestAnyCommandStopsAKilledReinsGrandchildren(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs(filepath.Join("testdata", "procs", "grandchild.sh"))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := reinBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	flow := "name: grandchild\nsteps:\n  - {id: fetch, tool: fetch, args: {}}\n" +
		"tools:\n  fetch: {command: [\"sh\", " + strconv.Quote(script) + "], effect: read, idempotent: true}\n"
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &procFixture{t: t, bin: bin, dir: dir, db: filepath.Join(dir, "rein.db")}
	effect := filepath.Join(dir, "effect")

	cmd, _, stderr := f.start("run", f.dir, "--db", f.db, "-o", "json")
	leader, grandchild := f.pid("leader.pid"), f.pid("grandchild.pid")
	t.Cleanup(func() { _ = syscall.Kill(-leader, syscall.SIGKILL) })
	f.waitProcessRecorded()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for deadline := time.Now().Add(10 * time.Second); processLive(leader); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the tool (pid %d) outlived rein\n%s", leader, stderr)
		}
	}
	if !processLive(grandchild) {
		t.Fatalf("the grandchild (pid %d) died with rein: nothing left to stop", grandchild)
	}

	if code, out, errs := f.cli("runs", "list"); code != exitOK {
		t.Fatalf("runs list: exit %d\n%s\n%s", code, out, errs)
	}
	// stopped by the time the command returned, not later.
	if live, err := proc.Live(leader); err != nil || len(live) != 0 {
		t.Fatalf("after rein runs list the tool's group %d still has %v (%v)", leader, live, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// a live grandchild writes within a tenth of a second of the release.
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(effect); err == nil {
			t.Fatal("the grandchild of the killed rein wrote its effect")
		}
	}
}
