package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// The resume-decides-a-compensation test: a run's first remediation
// leaves an escalation (hold's compensation, release, fails), so the run
// waits; a second remediation (rein runs remediate with another premise)
// dispatches book's compensation, refund — not idempotent — and its
// process is killed while refund runs. The plain rein runs resume that
// follows the person's decision on the first escalation must decide the
// refund as every call in doubt: unknown, a person decides; never made
// again, never forgotten.
const resumeRemedyFlow = `name: resume_remedy
steps:
  - {id: book, tool: book, args: {n: a}}
  - {id: hold, tool: hold, args: {n: b}}
  - {id: fail, tool: broken, args: {}}
`

const resumeRemedyRun = "rr"

// resumeRemedyTools: book and hold (writes) with compensations refund
// (external) and release (write, always fails); broken fails. refund
// appends its key to dir/refund.log and, with kill set, dies by SIGKILL
// before it returns.
func resumeRemedyTools(dir string, kill, check bool) *tool.Registry {
	reg := &tool.Registry{}
	back := func(name string) *tool.Compensation {
		return &tool.Compensation{Tool: name, Args: map[string]any{"id": "{output.id}"}}
	}
	ok := func(spec tool.Spec) tool.Tool {
		return tool.Func(spec, func(context.Context, any) (any, error) { return map[string]any{"id": spec.Name + "-1"}, nil })
	}
	refund := tool.Func(tool.Spec{Name: "refund", Effect: tool.EffectExternal}, func(ctx context.Context, _ any) (any, error) {
		f, err := os.OpenFile(filepath.Join(dir, "refund.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		_, err = f.WriteString(tool.CallInfoFrom(ctx).IdempotencyKey + "\n")
		f.Close()
		if err != nil {
			return nil, err
		}
		if kill {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return map[string]any{"refunded": true}, nil
	})
	if check { // refund's check: it happened when its key is in refund.log
		refund = tool.WithCheck(refund, func(_ context.Context, req tool.CheckRequest) (tool.CheckResult, error) {
			b, err := os.ReadFile(filepath.Join(dir, "refund.log"))
			if err != nil {
				return tool.CheckResult{}, err
			}
			return tool.CheckResult{Happened: slices.Contains(strings.Fields(string(b)), req.IdempotencyKey), Output: map[string]any{"refunded": true}}, nil
		})
	}
	fail := func(name string, effect tool.Effect) tool.Tool {
		return tool.Func(tool.Spec{Name: name, Effect: effect}, func(context.Context, any) (any, error) {
			return nil, fault.New(fault.Business, errors.New(name+" is down"))
		})
	}
	for _, t := range []tool.Tool{
		ok(tool.Spec{Name: "book", Effect: tool.EffectWrite, Reversibility: tool.Compensatable, Compensate: back("refund")}),
		ok(tool.Spec{Name: "hold", Effect: tool.EffectWrite, Reversibility: tool.Compensatable, Compensate: back("release")}),
		refund, fail("release", tool.EffectWrite), fail("broken", tool.EffectNone),
	} {
		if err := reg.Register(t); err != nil {
			panic(err)
		}
	}
	return reg
}

func resumeRemedyEngine(t testing.TB, dir string, st store.Store, kill bool, clock engine.Clock) (*engine.Engine, *flow.Flow) {
	return resumeRemedyEngineChecked(t, dir, st, kill, false, clock)
}

// resumeRemedyEngineChecked is resumeRemedyEngine, refund with a check
// when check is set.
func resumeRemedyEngineChecked(t testing.TB, dir string, st store.Store, kill, check bool, clock engine.Clock) (*engine.Engine, *flow.Flow) {
	reg := resumeRemedyTools(dir, kill, check)
	f, err := flow.Parse([]byte(resumeRemedyFlow), "resume_remedy.yaml", &flow.Options{Tools: specsOf(reg)})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Tools: reg, Store: st, Clock: clock}), f
}

// remedyOf picks the remedy of step's call from the run's remedies.
func remedyOf(t testing.TB, st store.Store, step string) []engine.Remedy {
	t.Helper()
	for _, rm := range remediesOf(t, st, resumeRemedyRun) {
		if rm.Effect.StepID == step {
			return []engine.Remedy{rm}
		}
	}
	t.Fatalf("no remedy of step %s", step)
	return nil
}

// TestResumeRemedyChild is the child of TestResumeDecidesADispatchedCompensation.
func TestResumeRemedyChild(t *testing.T) {
	if os.Getenv("REIN_RESUME_REMEDY") == "" {
		t.Skip("the resume-decides-a-compensation test's child process")
	}
	ctx := context.Background()
	dir := os.Getenv("REIN_CRASH_DIR")
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, f := resumeRemedyEngine(t, dir, st, false, nil)
	if res, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: resumeRemedyRun}); err != nil || res.Status != trace.RunFailed {
		t.Fatalf("the run did not fail: %v %+v", err, res)
	}
	res, err := e.Remediate(ctx, f, resumeRemedyRun, "hold", remedyOf(t, st, "hold"))
	if err != nil || res.Status != trace.RunWaiting || len(res.Pending) != 1 {
		t.Fatalf("the first remediation did not escalate release: %v %+v", err, res)
	}
	killing, f := resumeRemedyEngine(t, dir, st, true, nil)
	_, err = killing.Remediate(ctx, f, resumeRemedyRun, "book", remedyOf(t, st, "book"))
	t.Fatalf("the child was meant to die in refund, but its remediation returned (%v)", err)
}

// TestResumeDecidesADispatchedCompensation: see above. A person rejects
// the first escalation (leave hold as it is) and resumes: refund, found
// dispatched without an outcome, is unknown — an escalation — not made
// again; settled by a person, the run ends failed, refund made once.
func TestResumeDecidesADispatchedCompensation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	t.Parallel()
	ctx := context.Background()
	dir, st := killedChild(t, "TestResumeRemedyChild", "REIN_RESUME_REMEDY=1")
	if got := readLines(t, filepath.Join(dir, "refund.log")); len(got) != 1 {
		t.Fatalf("refund ran %d times before the kill, want once: %v", len(got), got)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: resumeRemedyRun, StepID: "hold/1/compensate", Status: store.ApprovalRejected, DecidedBy: "ops"}); err != nil {
		t.Fatal(err)
	}
	e, f := resumeRemedyEngine(t, dir, st, false, pastLease(t, st, resumeRemedyRun))
	res, err := e.Resume(ctx, f, resumeRemedyRun)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunWaiting || len(res.Pending) != 1 || res.Pending[0].StepID != "book/1/compensate" ||
		res.Pending[0].Kind != store.KindEscalation || !strings.Contains(res.Pending[0].Message, "dispatched and the process stopped") {
		t.Fatalf("status %s, pending %+v: want refund, dispatched without an outcome, escalated as unknown", res.Status, res.Pending)
	}
	if got := readLines(t, filepath.Join(dir, "refund.log")); len(got) != 1 {
		t.Fatalf("the resume made refund again: %v", got)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: resumeRemedyRun, StepID: "book/1/compensate", Status: store.ApprovalSettled, DecidedBy: "ops"}); err != nil {
		t.Fatal(err)
	}
	if res, err := e.Resume(ctx, f, resumeRemedyRun); err != nil || res.Status != trace.RunFailed || len(res.Pending) != 0 {
		t.Fatalf("after the refund was settled: %v %+v", err, res)
	}
	if got := readLines(t, filepath.Join(dir, "refund.log")); len(got) != 1 {
		t.Fatalf("refund ran %d times in all, want once: %v", len(got), got)
	}
}

// TestResumeAsksACompensationsCheck: as above, but refund declares a
// check, which finds the refund's key in its ledger: the resume settles
// the compensation as done (its record says reconciled) without asking
// anybody about it, and refund is not made again.
func TestResumeAsksACompensationsCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	t.Parallel()
	ctx := context.Background()
	dir, st := killedChild(t, "TestResumeRemedyChild", "REIN_RESUME_REMEDY=1")
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: resumeRemedyRun, StepID: "hold/1/compensate", Status: store.ApprovalRejected, DecidedBy: "ops"}); err != nil {
		t.Fatal(err)
	}
	e, f := resumeRemedyEngineChecked(t, dir, st, false, true, pastLease(t, st, resumeRemedyRun))
	res, err := e.Resume(ctx, f, resumeRemedyRun)
	if err != nil || res.Status != trace.RunFailed || len(res.Pending) != 0 {
		t.Fatalf("resume: %v %+v; want the run failed as before, nobody asked", err, res)
	}
	if got := readLines(t, filepath.Join(dir, "refund.log")); len(got) != 1 {
		t.Fatalf("refund ran %d times in all, want once: %v", len(got), got)
	}
	calls, err := st.Calls(ctx, resumeRemedyRun, "book")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(calls, func(c *store.Call) bool {
		return c.Key == resumeRemedyRun+"/book/1/compensate" && c.Status == store.CallSucceeded && c.Reconciled == journal.ReconciledHappened
	}) {
		t.Errorf("no reconciled record of the refund: %+v", calls)
	}
}
