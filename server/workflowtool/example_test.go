package workflowtool_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/store"
)

// TestProcessWorkflowExample drives examples/process-workflow the way an
// agent does: start → submit(parse) → submit(route), first breaking its
// contract, then its gate, then corrected → submit_from_source(assign) →
// prepare_delivery.
func TestProcessWorkflowExample(t *testing.T) {
	t.Parallel()
	driveProcess(t, openStore(t))
}

// TestProcessWorkflowPostgres drives the same task on PostgreSQL.
func TestProcessWorkflowPostgres(t *testing.T) {
	t.Parallel()
	driveProcess(t, openPostgres(t))
}

func driveProcess(t *testing.T, st store.Store) {
	w := newWorkflow(t, "../../examples/process-workflow", st)
	if w.Name() != "process_workflow" {
		t.Errorf("Name = %s", w.Name())
	}
	start := `{"action":"start","workflow_id":"process.from-long-desc.v1","session_id":"s1","input":{"description":"a welded frame with a bracket"}}`
	a := mustDo(t, w, start)
	if a.Status != "waiting" || !slices.Equal(nextIDs(a), []string{"parse:submit"}) {
		t.Fatalf("start = %s %v", a.Status, nextIDs(a))
	}
	n := a.NextActions[0]
	if n.Skill != "parse-input" || n.RequiresConfirmation || !strings.Contains(string(n.OutputSchema), `"items"`) || n.Instruction == "" {
		t.Errorf("next action = %+v", n)
	}
	task := a.TaskID
	again := mustDo(t, w, start)
	if again.TaskID != task || !again.Existing {
		t.Errorf("start again = %s existing %v, want %s existing", again.TaskID, again.Existing, task)
	}

	a = mustDo(t, w, fmt.Sprintf(`{"action":"submit","task_id":%q,"step_id":"parse","skill":"parse-input","data":{"items":["frame","bracket"]}}`, task))
	if !slices.Equal(nextIDs(a), []string{"route:submit"}) || len(a.Artifacts) != 1 || a.Artifacts[0].Producer != "agent" {
		t.Fatalf("after parse: %v %+v", nextIDs(a), a.Artifacts)
	}

	// the contract: route must be a string, steps strings; every problem is listed.
	_, e := do(t, w, fmt.Sprintf(`{"action":"submit","task_id":%q,"step_id":"route","data":{"route":7,"steps":["cut",3]}}`, task))
	wantError(t, "broken contract", e, fault.Business)
	var ptrs []string
	for _, p := range e.Problems {
		ptrs = append(ptrs, p.Pointer)
	}
	if !slices.Equal(ptrs, []string{"/route", "/steps/1"}) || e.Retryable {
		t.Errorf("problems = %+v", e.Problems)
	}
	// the gate: an empty route.
	_, e = do(t, w, fmt.Sprintf(`{"action":"submit","task_id":%q,"step_id":"route","data":{"route":""}}`, task))
	wantError(t, "failing gate", e, fault.Business)
	if len(e.Problems) != 1 || !strings.Contains(e.Problems[0].Reason, `gate "output.route != \"\""`) {
		t.Errorf("gate problems = %+v", e.Problems)
	}
	a = mustDo(t, w, fmt.Sprintf(`{"action":"status","task_id":%q}`, task))
	if !slices.Equal(nextIDs(a), []string{"route:submit"}) {
		t.Fatalf("after rejections the step is still ready: %v", nextIDs(a))
	}
	events, err := st.Events(t.Context(), task, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	rejected := 0
	for _, ev := range events {
		if ev.Kind == "submission_rejected" && ev.StepID == "route" && ev.OutputSHA != "" {
			rejected++
		}
	}
	if rejected != 2 {
		t.Errorf("journaled rejections = %d, want 2", rejected)
	}

	a = mustDo(t, w, fmt.Sprintf(`{"action":"submit","task_id":%q,"step_id":"route","data":{"route":"weld","steps":["cut","weld"]}}`, task))
	if !slices.Equal(nextIDs(a), []string{"assign:submit_from_source"}) {
		t.Fatalf("after route: %v", nextIDs(a))
	}
	_, e = do(t, w, fmt.Sprintf(`{"action":"submit","task_id":%q,"step_id":"assign","data":{}}`, task))
	wantError(t, "submit to a source step", e, fault.Business)

	a = mustDo(t, w, fmt.Sprintf(`{"action":"submit_from_source","task_id":%q,"step_id":"assign","skill":"assign-materials"}`, task))
	if a.Status != "succeeded" || len(a.NextActions) != 0 || len(a.Artifacts) != 3 {
		t.Fatalf("after assign: %s %v %d artifacts", a.Status, nextIDs(a), len(a.Artifacts))
	}
	if got := a.Artifacts[2]; got.Producer != "adapter:material-assigner.v2" ||
		string(got.Output) != `{"assignments":[{"item":"frame","material":"steel"},{"item":"bracket","material":"steel"}],"route":"weld"}` {
		t.Errorf("assign artifact = %+v %s", got, got.Output)
	}

	a = mustDo(t, w, fmt.Sprintf(`{"action":"prepare_delivery","task_id":%q}`, task))
	d := a.Delivery
	if d == nil || !slices.Equal(d.Deliverables, []string{"assign"}) {
		t.Fatalf("delivery = %+v", d)
	}
	var names []string
	paths := map[string]string{}
	for _, f := range d.Files {
		names = append(names, f.Name)
		paths[f.Name] = f.Path
		raw, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		if hex.EncodeToString(sum[:]) != f.SHA256 {
			t.Errorf("%s: sha256 differs from the answer's", f.Name)
		}
	}
	if !slices.Equal(names, []string{"deliverables.csv", "deliverables.json", "deliverables.md", "deliverables.xlsx", "run.mmd"}) {
		t.Errorf("files = %v", names)
	}
	csv, _ := os.ReadFile(paths["deliverables.csv"])
	if !strings.Contains(string(csv), "assign,/assignments/1/item,bracket\n") {
		t.Errorf("csv:\n%s", csv)
	}
	mmd, _ := os.ReadFile(paths["run.mmd"])
	if !strings.Contains(string(mmd), "class s2_assign run_succeeded") {
		t.Errorf("run.mmd:\n%s", mmd)
	}
	x, err := excelize.OpenFile(paths["deliverables.xlsx"])
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	rows, err := x.GetRows("1 assign")
	if err != nil || len(rows) != 3 || strings.Join(rows[0], ",") != "item,material" || strings.Join(rows[2], ",") != "bracket,steel" {
		t.Errorf("xlsx sheet = %v %v", rows, err)
	}
	again2 := mustDo(t, w, fmt.Sprintf(`{"action":"prepare_delivery","task_id":%q}`, task))
	for i, f := range again2.Delivery.Files {
		if f.SHA256 != d.Files[i].SHA256 {
			t.Errorf("%s differs when prepared again", f.Name)
		}
	}
	events, _ = st.Events(t.Context(), task, 0, 0)
	if last := events[len(events)-1]; last.Kind != "delivery_prepared" || last.Preview != d.Dir {
		t.Errorf("last event = %+v, want delivery_prepared", last)
	}

	// after the task finished, a submission is a conflict and nothing is recorded.
	_, e = do(t, w, fmt.Sprintf(`{"action":"submit","task_id":%q,"step_id":"route","data":{"route":"paint"}}`, task))
	wantError(t, "submit after the end", e, fault.Conflict)
	aps, _ := st.Approvals(t.Context(), &store.ListApprovalsParams{RunID: task, Status: store.ApprovalSettled})
	if len(aps) != 3 {
		t.Errorf("settled submissions = %d, want 3", len(aps))
	}
}

// TestDesignProcessFlowUnchanged runs the reference agent-driven flow
// (flow/testdata/design/process), unchanged, end to end.
func TestDesignProcessFlowUnchanged(t *testing.T) {
	t.Parallel()
	w := newWorkflow(t, "../../flow/testdata/design/process", openStore(t))
	if w.Name() != "process_from-long-desc_v1_workflow" {
		t.Errorf("Name = %s", w.Name())
	}
	a := mustDo(t, w, `{"action":"start","workflow_id":"process.from-long-desc.v1","session_id":"s","input":{"text":"long description"}}`)
	a = mustDo(t, w, fmt.Sprintf(`{"action":"submit","task_id":%q,"step_id":"parse","skill":"parse-input","data":{"items":["a"]}}`, a.TaskID))
	a = mustDo(t, w, fmt.Sprintf(`{"action":"submit","task_id":%q,"step_id":"route","skill":"route-item","data":{"route":"r"}}`, a.TaskID))
	if a.Status != "succeeded" || len(a.NextActions) != 0 || len(a.Artifacts) != 2 {
		t.Errorf("answer = %s %v %d artifacts", a.Status, nextIDs(a), len(a.Artifacts))
	}
}
