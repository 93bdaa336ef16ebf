package engine_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// The effect ledger's crash test: an agent call a person approved (the
// tool's approval: required, or the gate's require_approval) is killed
// with SIGKILL while it runs, in a child process; refund, which is not
// idempotent, appends each execution to refund.log, which survives the
// kill. However often the run is resumed, the refund ran once: the call
// is unknown and waits for a new decision (the approval was used).

const ledgerRun = "ledger"

// ledgerEngine runs agentScript (turn 2 refunds order 1042), or with plan
// planApprovalScript (turn 1's execute_plan refunds in its step back), over
// agentFlow (refund: approval: required) or, gated, over planGateFlow with
// the refunds-by-hand rule; kill names the tool the process dies in.
func ledgerEngine(t testing.TB, dir string, st store.Store, gated, plan bool, kill string, clock engine.Clock) (*engine.Engine, *flow.Flow) {
	reg := agentTools(dir, kill)
	models := &model.Registry{}
	script := agentScript
	if plan {
		script = planApprovalScript
	}
	models.Register("m", agentTurns(dir, "", script...))
	src := agentFlow
	var gate safety.Gate
	if gated {
		src, gate = planGateFlow, refundsByHand
	}
	f, err := flow.Parse([]byte(src), "support.yaml", &flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Tools: reg, Models: models, Store: st, Gate: gate, Clock: clock}), f
}

// TestAgentLedgerChild is the child of TestAgentApprovedCallRunsOnce.
// REIN_AGENT_LEDGER is "<gated|required|plan>:<stage>": at stage 1 it runs the
// agent until the refund waits, approves it and resumes; at stage 2 it
// resumes (a person approved the unknown refund). Either way it dies by
// SIGKILL inside the refund.
func TestAgentLedgerChild(t *testing.T) {
	mode := os.Getenv("REIN_AGENT_LEDGER")
	if mode == "" {
		t.Skip("the effect ledger test's child process")
	}
	ctx := context.Background()
	dir := os.Getenv("REIN_CRASH_DIR")
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	gated := strings.HasPrefix(mode, "gated:")
	var clock engine.Clock
	if strings.HasSuffix(mode, ":2") {
		clock = pastLease(t, st, ledgerRun)
	}
	e, f := ledgerEngine(t, dir, st, gated, strings.HasPrefix(mode, "plan:"), "during:refund", clock)
	if strings.HasSuffix(mode, ":1") {
		res, err := e.Run(ctx, f, agentInput, &engine.RunOptions{RunID: ledgerRun})
		if err != nil || res.Status != trace.RunWaiting || len(res.Pending) != 1 {
			t.Fatalf("the run did not park on the refund: %v %+v", err, res)
		}
		if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: ledgerRun, StepID: res.Pending[0].StepID, Status: store.ApprovalApproved}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = e.Resume(ctx, f, ledgerRun)
	t.Fatalf("the child was meant to die in the refund, but its resume returned (%v)", err)
}

// childIn runs the test named child of this test binary with
// REIN_CRASH_DIR=dir and env, and requires that it die by SIGKILL.
func childIn(t *testing.T, dir, child string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), env...), "REIN_CRASH_DIR="+dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
	}
}

// refunds counts the executions of the refund tool in dir's ledger (each
// appends its key and its order: two fields).
func refunds(t *testing.T, dir string) int {
	return len(readLines(t, filepath.Join(dir, "refund.log"))) / 2
}

func TestAgentApprovedCallRunsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	cases := []struct {
		name  string
		gated bool
		// again: a person approves the unknown refund ("run it again"),
		// and that dispatch is killed too.
		again bool
		// plan: the refund is the approved step of an execute_plan call,
		// which is then the call in doubt.
		plan bool
	}{
		{name: "approval required"},
		{name: "gate require_approval", gated: true},
		{name: "approved after unknown", again: true},
		{name: "approved plan step", plan: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			mode, doubt := "required", "support/turn2/call1"
			switch {
			case tc.gated:
				mode = "gated"
			case tc.plan:
				mode, doubt = "plan", "support/turn1/call1"
			}
			childIn(t, dir, "TestAgentLedgerChild", "REIN_AGENT_LEDGER="+mode+":1")
			st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			// resumed twice: the approval counts for one dispatch only.
			resumeUnknown := func(want int) {
				t.Helper()
				for range 2 {
					e, f := ledgerEngine(t, dir, st, tc.gated, tc.plan, "", pastLease(t, st, ledgerRun))
					res, err := e.Resume(ctx, f, ledgerRun)
					if err != nil {
						t.Fatal(err)
					}
					wantStatus(t, res, trace.RunWaiting)
					if len(res.Pending) != 1 || res.Pending[0].StepID != doubt || res.Pending[0].Kind != store.KindUnknown {
						t.Fatalf("pending %+v, want the refund unknown", res.Pending[0])
					}
					if !strings.Contains(res.Pending[0].Message, "used once") {
						t.Errorf("the unknown approval does not say the approval was used: %q", res.Pending[0].Message)
					}
					if n := refunds(t, dir); n != want {
						t.Fatalf("the refund ran %d times, want %d: %v", n, want, readLines(t, filepath.Join(dir, "refund.log")))
					}
				}
			}
			resumeUnknown(1)
			if tc.again {
				if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: ledgerRun, StepID: doubt, Status: store.ApprovalApproved}); err != nil {
					t.Fatal(err)
				}
				childIn(t, dir, "TestAgentLedgerChild", "REIN_AGENT_LEDGER="+mode+":2")
				resumeUnknown(2)
			}
			// the journal holds the dispatch: the refund's call record
			// started, with its key and args digest.
			calls, err := st.Calls(ctx, ledgerRun, "support")
			if err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, c := range calls {
				if c.Key == ledgerRun+"/support/1/"+strings.TrimPrefix(doubt, "support/") {
					found = c.Status == store.CallStarted && c.ArgsSHA != "" && (c.Name == "refund" || tc.plan && c.Name == "execute_plan")
				}
			}
			if !found {
				t.Errorf("no started record of the dispatched refund: %+v", calls)
			}
			// a person settles it: the run goes on, nothing runs again.
			if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: ledgerRun, StepID: doubt,
				Status: store.ApprovalSettled, Output: []byte(`{"refunded":true}`)}); err != nil {
				t.Fatal(err)
			}
			e, f := ledgerEngine(t, dir, st, tc.gated, tc.plan, "", pastLease(t, st, ledgerRun))
			res, err := e.Resume(ctx, f, ledgerRun)
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res, trace.RunSucceeded)
			want := 1
			if tc.again {
				want = 2
			}
			if n := refunds(t, dir); n != want {
				t.Errorf("the refund ran %d times in all, want %d", n, want)
			}
		})
	}
}

// attemptsFlow: the agent's model fails its first attempt after the
// refund (approval: required) ran; on_error: retry starts a second
// attempt, which asks for the same refund again.
const attemptsFlow = `name: support
inputs: {type: object, properties: {task: {type: string}}}
steps:
  - id: support
    type: agent
    model: m
    prompt_template: "{input.task}"
    tools: {refund: {approval: required}}
    on_error: retry
    retries: 1
    backoff: {initial: 1ms, max: 1ms}
`

func attemptsEngine(t testing.TB, dir string, st store.Store, clock engine.Clock) (*engine.Engine, *flow.Flow) {
	reg := agentTools(dir, "")
	models := &model.Registry{}
	models.Register("m", model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		switch {
		case req.Turn == 1:
			return &model.Response{ToolCalls: []model.ToolCall{call("r", "refund", `{"order":"1042"}`)}}, nil
		case req.Attempt == 1:
			return nil, errors.New("the model broke") // a business error: not retried within the turn
		}
		return &model.Response{Text: "refunded order 1042"}, nil
	}))
	f, err := flow.Parse([]byte(attemptsFlow), "support.yaml", &flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Tools: reg, Models: models, Store: st, Clock: clock}), f
}

// parkKillingStore kills the process instead of committing the approval
// of step id at.
type parkKillingStore struct {
	store.Store
	at string
}

func (k *parkKillingStore) Commit(ctx context.Context, t *store.Transition) error {
	for _, a := range t.Approvals {
		if a.StepID == k.at {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	return k.Store.Commit(ctx, t)
}

// TestAgentAttemptsChild is the child of TestAgentApprovalIsNotAnotherAttempts:
// attempt 1's refund is approved and runs, the model fails, and the
// process dies as attempt 2's refund (the same call by name and args) is
// about to be asked about: its waiting call is journaled, its approval is
// not.
func TestAgentAttemptsChild(t *testing.T) {
	if os.Getenv("REIN_AGENT_ATTEMPTS") == "" {
		t.Skip("the approval-per-attempt test's child process")
	}
	ctx := context.Background()
	dir := os.Getenv("REIN_CRASH_DIR")
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, f := attemptsEngine(t, dir, st, nil)
	res, err := e.Run(ctx, f, agentInput, &engine.RunOptions{RunID: ledgerRun})
	if err != nil || len(res.Pending) != 1 || res.Pending[0].StepID != "support/turn1/call1" {
		t.Fatalf("the refund did not wait: %v %+v", err, res)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: ledgerRun, StepID: "support/turn1/call1", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	e, f = attemptsEngine(t, dir, &parkKillingStore{Store: st, at: "support/turn1/call1"}, nil)
	_, err = e.Resume(ctx, f, ledgerRun)
	t.Fatalf("the child was meant to die before attempt 2's approval was committed, but its resume returned (%v)", err)
}

// TestAgentApprovalIsNotAnotherAttempts: an approval given (and used) for
// attempt 1's call turn1/call1 does not decide attempt 2's call of the
// same name and args: resumed, attempt 2's refund waits for its own
// approval, and the refund ran once.
func TestAgentApprovalIsNotAnotherAttempts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	childIn(t, dir, "TestAgentAttemptsChild", "REIN_AGENT_ATTEMPTS=1")
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, f := attemptsEngine(t, dir, st, pastLease(t, st, ledgerRun))
	res, err := e.Resume(ctx, f, ledgerRun)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	if len(res.Pending) != 1 || res.Pending[0].StepID != "support/turn1/call1" || res.Pending[0].Kind != store.KindApproval {
		t.Fatalf("pending %+v, want attempt 2's refund waiting", res.Pending)
	}
	if n := refunds(t, dir); n != 1 {
		t.Fatalf("the refund ran %d times: attempt 1's approval decided attempt 2's call", n)
	}
}

// checkedLedgerEngine is ledgerEngine (approval: required) with a check on
// refund that answers happened (its key is in refund.log) when ledger is
// set, and "did not take effect" otherwise.
func checkedLedgerEngine(t testing.TB, dir string, st store.Store, ledger bool, clock engine.Clock) (*engine.Engine, *flow.Flow) {
	_, f := ledgerEngine(t, dir, st, false, false, "", clock)
	plain := agentTools(dir, "")
	reg := &tool.Registry{}
	for _, name := range []string{"status", "charge", "refund"} {
		tl, _ := plain.Lookup(name)
		if name == "refund" {
			tl = tool.WithCheck(tl, func(ctx context.Context, req tool.CheckRequest) (tool.CheckResult, error) {
				if ledger && slices.Contains(strings.Fields(strings.Join(readLines(t.(*testing.T), filepath.Join(dir, "refund.log")), " ")), req.IdempotencyKey) {
					return tool.CheckResult{Happened: true, Output: map[string]any{"tool": "refund", "order": "1042"}}, nil
				}
				return tool.CheckResult{}, nil
			})
		}
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	models := &model.Registry{}
	models.Register("m", agentTurns(dir, "", agentScript...))
	return engine.New(engine.Config{Tools: reg, Models: models, Store: st, Clock: clock}), f
}

// TestAgentApprovedCallReconciled: an agent call a person approved,
// killed while it runs, is decided on resume by its tool's check, as a
// flow step's is: it happened → it settles with the check's output and
// the refund is not made again; it did not → the approved call is made
// again with the same key (the approval was for this one dispatch, which
// did not take effect). Either way the call record says how it was
// reconciled, and nobody else is asked.
func TestAgentApprovedCallReconciled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	for _, happened := range []bool{true, false} {
		name := map[bool]string{true: "happened", false: "did not happen"}[happened]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			childIn(t, dir, "TestAgentLedgerChild", "REIN_AGENT_LEDGER=required:1")
			st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			e, f := checkedLedgerEngine(t, dir, st, happened, pastLease(t, st, ledgerRun))
			res, err := e.Resume(ctx, f, ledgerRun)
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res, trace.RunSucceeded)
			lines := readLines(t, filepath.Join(dir, "refund.log"))
			key := ledgerRun + "/support/1/turn2/call1"
			want := 1
			if !happened {
				want = 2 // the approved dispatch, which did not take effect, made again
			}
			if refunds(t, dir) != want || lines[0] != key || lines[len(lines)-2] != key {
				t.Fatalf("refund.log %q, want %d executions, each with key %s", lines, want, key)
			}
			events, err := st.Events(ctx, ledgerRun, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			var story []string // the refund's call records, in journal order
			for _, ev := range events {
				if c := ev.Call; ev.Kind == trace.CallRecorded && c != nil && c.Key == key {
					story = append(story, string(c.Status)+"/"+c.Reconciled)
				}
			}
			// waiting: the call parked for its approval (every commit of an
			// agent's call is its call record).
			wantStory := []string{"waiting/", "started/", "succeeded/" + journal.ReconciledHappened}
			if !happened {
				wantStory = []string{"waiting/", "started/", "failed/" + journal.ReconciledNotHappened, "started/", "succeeded/"}
			}
			if !slices.Equal(story, wantStory) {
				t.Errorf("the refund's call records %v, want %v", story, wantStory)
			}
		})
	}
}
