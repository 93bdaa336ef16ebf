package workflowtool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/server/workflowtool"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

func init() {
	workflowtool.RegisterAdapter("test.counter", func(ctx context.Context, up map[string]any) (any, error) {
		in, _ := up["input"].(map[string]any)
		words, _ := in["text"].(string)
		return map[string]any{"n": len(strings.Fields(words))}, nil
	})
	workflowtool.RegisterAdapter("test.down", func(ctx context.Context, up map[string]any) (any, error) {
		return nil, fault.New(fault.Transient, errors.New("the source is down"))
	})
}

const processStart = `{"action":"start","session_id":"s","input":{"description":"a frame"}}`

// settled counts the accepted submissions of a task.
func settled(t *testing.T, st store.Store, task string) int {
	t.Helper()
	aps, err := st.Approvals(t.Context(), &store.ListApprovalsParams{RunID: task, Status: store.ApprovalSettled})
	if err != nil {
		t.Fatal(err)
	}
	return len(aps)
}

// TestBadSubmissions: each bad request is a structured error, and none is
// recorded as an accepted submission.
func TestBadSubmissions(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	w := newWorkflow(t, "../../examples/process-workflow", st)
	task := mustDo(t, w, processStart).TaskID
	huge := `{"action":"submit","task_id":"` + task + `","step_id":"parse","data":{"items":["` + strings.Repeat("x", 100<<20) + `"]}}`
	for _, tc := range []struct {
		name, req string
		class     fault.Class
		pointer   string
	}{
		{"request not JSON", `{"action":`, fault.Format, ""},
		{"unknown action", `{"action":"finish"}`, fault.Format, "/action"},
		{"data not JSON", `{"action":"submit","task_id":"` + task + `","step_id":"parse","data":"{items:"}`, fault.Business, "/data"},
		{"raw data not JSON", ``, fault.Format, "/data"},
		{"100 MB", huge, fault.Format, ""},
		{"breaks the schema", `{"action":"submit","task_id":"` + task + `","step_id":"parse","data":{"items":"frame"}}`, fault.Business, "/data"},
		{"not ready", `{"action":"submit","task_id":"` + task + `","step_id":"route","data":{"route":"weld"}}`, fault.Business, "/step_id"},
		{"unknown step", `{"action":"submit","task_id":"` + task + `","step_id":"paint","data":{}}`, fault.NotFound, "/step_id"},
		{"unknown task", `{"action":"submit","task_id":"no-such-task","step_id":"parse","data":{}}`, fault.NotFound, "/task_id"},
		{"no task", `{"action":"status"}`, fault.Format, "/task_id"},
		{"wrong skill", `{"action":"submit","task_id":"` + task + `","step_id":"parse","skill":"route-item","data":{"items":[]}}`, fault.Business, "/skill"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e *workflowtool.Error
			if tc.name == "raw data not JSON" {
				_, err := w.Do(t.Context(), &workflowtool.Request{Action: "submit", TaskID: task, StepID: "parse", Data: json.RawMessage(`{items:`)})
				errors.As(err, &e)
			} else {
				_, e = do(t, w, tc.req)
			}
			wantError(t, tc.name, e, tc.class)
			if e.Pointer != tc.pointer || e.Message == "" || e.Retryable {
				t.Errorf("error = %+v, want pointer %q, a message, not retryable", e, tc.pointer)
			}
		})
	}
	// the data is JSON but a string, not the object the schema wants.
	if n := settled(t, st, task); n != 0 {
		t.Errorf("accepted submissions = %d, want 0", n)
	}
	_, e := do(t, w, `{"action":"submit","task_id":"`+task+`","step_id":"route","data":{"route":"weld"}}`)
	if !slices.Equal(nextIDs(&workflowtool.Answer{NextActions: e.NextActions}), []string{"parse:submit"}) {
		t.Errorf("a step that is not ready names the ready ones: %+v", e.NextActions)
	}
}

// TestCancelThenSubmit: a cancelled task takes no submission.
func TestCancelThenSubmit(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	w := newWorkflow(t, "../../examples/process-workflow", st)
	task := mustDo(t, w, processStart).TaskID
	a := mustDo(t, w, fmt.Sprintf(`{"action":"cancel","task_id":%q,"reason":"the customer withdrew"}`, task))
	if a.Status != "cancelled" || len(a.NextActions) != 0 {
		t.Fatalf("cancel = %s %v", a.Status, nextIDs(a))
	}
	_, e := do(t, w, fmt.Sprintf(`{"action":"submit","task_id":%q,"step_id":"parse","data":{"items":["a"]}}`, task))
	wantError(t, "submit after cancel", e, fault.Conflict)
	_, e = do(t, w, fmt.Sprintf(`{"action":"cancel","task_id":%q}`, task))
	wantError(t, "cancel twice", e, fault.Conflict)
	_, e = do(t, w, fmt.Sprintf(`{"action":"prepare_delivery","task_id":%q}`, task))
	wantError(t, "deliver a cancelled task", e, fault.Business)
	if n := settled(t, st, task); n != 0 {
		t.Errorf("accepted submissions = %d, want 0", n)
	}
}

// TestConcurrentSubmits: two agents submit to the same step at once; one
// wins, the other gets a retryable conflict.
func TestConcurrentSubmits(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	w := newWorkflow(t, "../../examples/process-workflow", st)
	task := mustDo(t, w, processStart).TaskID
	var wg sync.WaitGroup
	errs := make([]*workflowtool.Error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := w.Handle(context.Background(), fmt.Appendf(nil, `{"action":"submit","task_id":%q,"step_id":"parse","data":{"items":["by-%d"]}}`, task, i))
			errors.As(err, &errs[i])
		}()
	}
	wg.Wait()
	won := 0
	for _, e := range errs {
		switch {
		case e == nil:
			won++
		case e.Type != fault.Conflict || !e.Retryable:
			t.Errorf("loser's error = %+v, want a retryable conflict", e)
		}
	}
	if won != 1 {
		t.Fatalf("winners = %d, want 1 (errors %+v)", won, errs)
	}
	a := mustDo(t, w, fmt.Sprintf(`{"action":"status","task_id":%q}`, task))
	if !slices.Equal(nextIDs(a), []string{"route:submit"}) || settled(t, st, task) != 1 {
		t.Errorf("status = %v, %d accepted", nextIDs(a), settled(t, st, task))
	}
}

// TestResumeAfterCrashBetweenSubmitAndCommit: the submission was recorded
// but the process stopped before the run went on; the next call (any
// action) takes the task up.
func TestResumeAfterCrashBetweenSubmitAndCommit(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	w := newWorkflow(t, "../../examples/process-workflow", st)
	task := mustDo(t, w, processStart).TaskID
	// what submit records before it resumes the run, and nothing after.
	if _, err := st.DecideApproval(t.Context(), &store.DecideApprovalParams{RunID: task, StepID: "parse", Status: store.ApprovalSettled,
		Output: json.RawMessage(`{"items":["frame"]}`), DecidedBy: "agent"}); err != nil {
		t.Fatal(err)
	}
	if run, _ := st.GetRun(t.Context(), task); run.Status != "pending" {
		t.Fatalf("run = %s, want pending", run.Status)
	}
	w2 := newWorkflow(t, "../../examples/process-workflow", st) // a new process
	a := mustDo(t, w2, fmt.Sprintf(`{"action":"status","task_id":%q}`, task))
	if a.Status != "waiting" || !slices.Equal(nextIDs(a), []string{"route:submit"}) || len(a.Artifacts) != 1 {
		t.Fatalf("status after the crash = %s %v %d", a.Status, nextIDs(a), len(a.Artifacts))
	}
}

// TestGoAdapterAndGate: a root source step gets the input from a Go
// adapter; a failing gate on a submission is a fixable rejection.
func TestGoAdapterAndGate(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	w := newWorkflow(t, "testdata/sourced", st)
	a := mustDo(t, w, `{"action":"start","input":{"text":"one two three"}}`)
	if !slices.Equal(nextIDs(a), []string{"count:submit_from_source"}) {
		t.Fatalf("start = %v", nextIDs(a))
	}
	a = mustDo(t, w, fmt.Sprintf(`{"action":"submit_from_source","task_id":%q,"step_id":"count"}`, a.TaskID))
	if len(a.Artifacts) != 1 || string(a.Artifacts[0].Output) != `{"n":3}` || a.Artifacts[0].Producer != "adapter:test.counter" {
		t.Fatalf("artifacts = %+v", a.Artifacts)
	}
	_, e := do(t, w, fmt.Sprintf(`{"action":"submit","task_id":%q,"step_id":"check","data":{"ok":false}}`, a.TaskID))
	wantError(t, "gate", e, fault.Business)
	a = mustDo(t, w, fmt.Sprintf(`{"action":"submit","task_id":%q,"step_id":"check","data":{"ok":true}}`, a.TaskID))
	if a.Status != "succeeded" {
		t.Errorf("status = %s", a.Status)
	}
}

// TestStartRefusals: a disabled workflow, an unknown adapter, a missing
// session.
func TestStartRefusals(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	_, e := do(t, newWorkflow(t, "testdata/disabled.yaml", st), `{"action":"start"}`)
	wantError(t, "disabled", e, fault.Policy)
	_, e = do(t, newWorkflow(t, "../../examples/process-workflow", st), `{"action":"start","input":{"description":"x"}}`)
	wantError(t, "no session", e, fault.Business)
	if e.Pointer != "/session_id" {
		t.Errorf("pointer = %q", e.Pointer)
	}
	_, e = do(t, newWorkflow(t, "../../examples/process-workflow", st), `{"action":"start","session_id":"s","input":{"description":3}}`)
	wantError(t, "input breaks inputs", e, fault.Business)
	if e.Pointer != "/input" || len(e.Problems) != 1 || e.Problems[0].Pointer != "/description" {
		t.Errorf("error = %+v", e)
	}
	dir := t.TempDir()
	writeFile(t, dir+"/flow.yaml", "name: x\nsteps:\n  - {id: a, adapter: no.such}\n")
	if _, err := workflowtool.New(dir, &workflowtool.Options{Store: st}); err == nil || !strings.Contains(err.Error(), `step a: unknown adapter "no.such"`) {
		t.Errorf("New with an unknown adapter = %v", err)
	}
}

// TestToolAndRegister: the workflow as a tool.Tool in a registry.
func TestToolAndRegister(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	reg := &tool.Registry{}
	if err := workflowtool.Register(reg, &workflowtool.Options{Store: st, DeliveryDir: t.TempDir()}, "../../examples/process-workflow"); err != nil {
		t.Fatal(err)
	}
	tl, ok := reg.Lookup("process_workflow")
	if !ok || !strings.Contains(string(tl.Spec().InputSchema), `"submit_from_source"`) {
		t.Fatalf("registry lookup = %v %v", tl, ok)
	}
	out, err := tl.Call(t.Context(), map[string]any{"action": "start", "session_id": "s", "input": map[string]any{"description": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if a := out.(*workflowtool.Answer); a.Status != "waiting" || len(a.NextActions) != 1 {
		t.Errorf("answer = %+v", a)
	}
	_, err = tl.Call(t.Context(), map[string]any{"action": "status", "task_id": "nope"})
	if fault.ClassOf(err) != fault.NotFound {
		t.Errorf("Call error = %v (class %s), want not_found", err, fault.ClassOf(err))
	}
}

// TestPersonDecidesASubmission: approving a submit step is no output (it
// waits again), rejecting it fails the task.
func TestPersonDecidesASubmission(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	w := newWorkflow(t, "../../examples/process-workflow", st)
	c, err := rein.Open(t.Context(), rein.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	task := mustDo(t, w, processStart).TaskID
	if _, err := c.Decide(t.Context(), task, "parse", rein.Decision{Status: store.ApprovalApproved, By: "alice"}, &rein.DecideOptions{Resume: true}); err != nil {
		t.Fatal(err)
	}
	a := mustDo(t, w, fmt.Sprintf(`{"action":"status","task_id":%q}`, task))
	if a.Status != "waiting" || !slices.Equal(nextIDs(a), []string{"parse:submit"}) {
		t.Fatalf("after approve: %s %v", a.Status, nextIDs(a))
	}
	if _, err := c.Decide(t.Context(), task, "parse", rein.Decision{Status: store.ApprovalRejected, By: "alice", Comment: "out of scope"}, &rein.DecideOptions{Resume: true}); err != nil {
		t.Fatal(err)
	}
	a = mustDo(t, w, fmt.Sprintf(`{"action":"status","task_id":%q}`, task))
	if a.Status != "failed" || len(a.NextActions) != 0 || !strings.Contains(string(a.Failure), "out of scope") {
		t.Fatalf("after reject: %s %v %s", a.Status, nextIDs(a), a.Failure)
	}
}

// TestAdapterFails: an adapter's error is a structured error with its
// class (transient: retryable), and the step stays ready.
func TestAdapterFails(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	w := newWorkflow(t, "testdata/broken", st)
	task := mustDo(t, w, `{"action":"start"}`).TaskID
	_, e := do(t, w, fmt.Sprintf(`{"action":"submit_from_source","task_id":%q,"step_id":"fetch"}`, task))
	wantError(t, "adapter down", e, fault.Transient)
	if !e.Retryable || !strings.Contains(e.Message, "the source is down") {
		t.Errorf("error = %+v", e)
	}
	a := mustDo(t, w, fmt.Sprintf(`{"action":"status","task_id":%q}`, task))
	if !slices.Equal(nextIDs(a), []string{"fetch:submit_from_source"}) {
		t.Errorf("status = %v", nextIDs(a))
	}
}

// TestPersonSettlesABadSubmission: a settle decision (rein runs settle)
// that breaks the step's schema or gate is refused by the engine the same
// way: journaled, and the step waits again; the task does not fail.
func TestPersonSettlesABadSubmission(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	w := newWorkflow(t, "../../examples/process-workflow", st)
	c, err := rein.Open(t.Context(), rein.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	task := mustDo(t, w, processStart).TaskID
	mustDo(t, w, fmt.Sprintf(`{"action":"submit","task_id":%q,"step_id":"parse","data":{"items":["a"]}}`, task))
	for _, bad := range []string{`{"route":""}`, `{"route":7}`} {
		if _, err := c.Decide(t.Context(), task, "route", rein.Decision{Status: store.ApprovalSettled, Output: json.RawMessage(bad), By: "alice"},
			&rein.DecideOptions{Resume: true}); err != nil {
			t.Fatal(err)
		}
		a := mustDo(t, w, fmt.Sprintf(`{"action":"status","task_id":%q}`, task))
		if a.Status != "waiting" || !slices.Equal(nextIDs(a), []string{"route:submit"}) || len(a.Artifacts) != 1 {
			t.Fatalf("after settling %s: %s %v %d artifacts", bad, a.Status, nextIDs(a), len(a.Artifacts))
		}
	}
	events, err := st.Events(t.Context(), task, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var why []string
	for _, ev := range events {
		if ev.Kind == "submission_rejected" {
			why = append(why, ev.Error)
		}
	}
	if len(why) != 2 || !strings.Contains(why[0], "gate") || !strings.Contains(why[1], "/route") {
		t.Errorf("rejections = %q", why)
	}
}
