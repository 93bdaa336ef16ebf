package temporal

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
)

// harness runs one flow in the SDK's test environment (a replaying
// workflow, real activities on the worker's engine, virtual time).
type harness struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment
	p   *project.Project
}

func newHarness(t *testing.T, p *project.Project) *harness {
	t.Helper()
	return newHarnessOf(t, p, &Workflow{})
}

// newHarnessOf is newHarness with w's settings (its Flows are p's).
func newHarnessOf(t *testing.T, p *project.Project, w *Workflow) *harness {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := newTestEnv(&s)
	fs := NewFlows()
	fs.Add(p)
	w.Flows = fs
	Register(env, w, &Activities{Flows: fs})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "run-1"})
	return &harness{t: t, env: env, p: p}
}

// run executes the run of input to its end and returns its result.
func (h *harness) run(input any) *Status {
	h.t.Helper()
	in, err := StartInput(h.p, input)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.runStart(in)
}

// runStart executes the run that in starts to its end and returns its
// result.
func (h *harness) runStart(in Start) *Status {
	h.t.Helper()
	h.env.ExecuteWorkflow(h.p.Flow.Name, in)
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("workflow did not complete")
	}
	if err := h.env.GetWorkflowError(); err != nil {
		// a failed run closes failed, carrying its status (Closed).
		cl, ok := ClosedOf(err)
		if !ok {
			h.t.Fatalf("workflow error: %v", err)
		}
		return cl.Status
	}
	var st Status
	if err := h.env.GetWorkflowResult(&st); err != nil {
		h.t.Fatal(err)
	}
	return &st
}

// query asks the running workflow one query.
func (h *harness) query(name string, out any) {
	h.t.Helper()
	v, err := h.env.QueryWorkflow(name)
	if err != nil {
		h.t.Fatalf("query %s: %v", name, err)
	}
	if err := v.Get(out); err != nil {
		h.t.Fatal(err)
	}
}

// updated is what became of an update: whether the run answered it,
// and the validator's or handler's error.
type updated struct {
	done bool
	err  error
}

// update sends a decision; the run answers it once the callback that sent
// it returned, so the answer is read after the run.
func (h *harness) update(d Decision) *updated {
	u := &updated{}
	h.env.UpdateWorkflow(UpdateDecide, "", &testsuite.TestUpdateCallback{
		OnReject:   func(err error) { u.done, u.err = true, err },
		OnAccept:   func() {},
		OnComplete: func(_ any, err error) { u.done, u.err = true, err },
	}, d)
	return u
}

const w5Flow = `name: w5
steps:
  - {id: s1, tool: t1, args: {n: "{input.n}"}}
  - {id: s2, tool: t2, args: {prev: "{s1.n}"}}
  - {id: s3, tool: t3, args: {prev: "{s2.n}"}}
  - {id: s4, tool: t4, args: {prev: "{s3.n}"}, when: "s3.n > 0"}
  - {id: s5, tool: t5, args: {prev: "{s4.n}"}}
`

// TestW5 runs a linear flow of five tools, one behind a when that holds:
// each tool runs once, with the key run/step/1, and the outputs chain.
func TestW5(t *testing.T) {
	l := newLedger()
	p := load(t, w5Flow, l.tool("t1", false), l.tool("t2", false), l.tool("t3", false), l.tool("t4", false), l.tool("t5", false))
	st := newHarness(t, p).run(map[string]any{"n": 7})
	if st.Status != "succeeded" || st.Error != nil {
		t.Fatalf("run: %+v", st)
	}
	for k, id := range []string{"s1", "s2", "s3", "s4", "s5"} {
		name := "t" + string(rune('1'+k))
		if got := l.keys(name); len(got) != 1 || got[0] != "run-1/"+id+"/1" {
			t.Errorf("%s calls: %v, want [run-1/%s/1]", name, got, id)
		}
		if s := stepOf(t, st, id); s.Status != "succeeded" || s.Attempts != 1 {
			t.Errorf("step %s: %+v", id, s)
		}
	}
	if got := output(t, st, "s2")["args"]; got.(map[string]any)["prev"] != float64(1) {
		t.Errorf("s2 args: %v", got)
	}
}

// TestRetryByClass: a transient failure is retried up to retries (with
// its backoff on a durable timer), each attempt with its own key; a
// business failure is not retried and fails the run with its class.
func TestRetryByClass(t *testing.T) {
	l := newLedger()
	l.fails["flaky"] = failPlan{n: 2, class: fault.Transient}
	l.fails["broken"] = failPlan{n: 5, class: fault.Business}
	p := load(t, `name: retry
steps:
  - {id: a, tool: flaky, args: {}, retries: 3, backoff: {initial: 1s, max: 4s, multiplier: 2}}
  - {id: b, tool: broken, args: {}, retries: 3}
  - {id: c, tool: flaky, args: {}}
`, l.tool("flaky", true), l.tool("broken", true))
	st := newHarness(t, p).run(map[string]any{})
	if st.Status != "failed" || st.Error == nil || st.Error.Class != string(fault.Business) || st.Error.Step != "b" {
		t.Fatalf("run: %+v (error %+v)", st, st.Error)
	}
	if got, want := l.keys("flaky"), []string{"run-1/a/1", "run-1/a/2", "run-1/a/3"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("flaky calls %v, want %v", got, want)
	}
	if l.count("broken") != 1 {
		t.Errorf("broken called %d times, want 1 (a business failure is not retried)", l.count("broken"))
	}
	if s := stepOf(t, st, "a"); s.Status != "succeeded" || s.Attempts != 3 {
		t.Errorf("a: %+v", s)
	}
	if s := stepOf(t, st, "c"); s.Status != "pending" {
		t.Errorf("c ran after the run failed: %+v", s)
	}
}

// TestWhenSkipFallback: a false when skips its step (and the steps that
// read it); on_error skip defaults; on_error fallback runs the fallback
// tool.
func TestWhenSkipFallback(t *testing.T) {
	l := newLedger()
	l.fails["broken"] = failPlan{n: 99, class: fault.Business}
	p := load(t, `name: recover
steps:
  - {id: gate, tool: ok, args: {}, when: "input.go == true"}
  - {id: reads, tool: ok, args: {x: "{gate.n}"}}
  - {id: skipped, tool: broken, args: {}, requires: [], on_error: skip, fallback_value: {headlines: []}}
  - {id: fell, tool: broken, args: {}, requires: [], on_error: fallback, fallback: {tool: backup, args: {why: fell}}}
  - {id: last, tool: ok, args: {}, requires: [skipped, fell]}
`, l.tool("ok", true), l.tool("broken", true), l.tool("backup", true))
	st := newHarness(t, p).run(map[string]any{"go": false})
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	want := map[string]string{"gate": "skipped", "reads": "skipped", "skipped": "defaulted", "fell": "fell_back", "last": "succeeded"}
	for id, w := range want {
		if s := stepOf(t, st, id); s.Status != w {
			t.Errorf("step %s: %s, want %s", id, s.Status, w)
		}
	}
	if string(st.Outputs["skipped"]) != `{"headlines":[]}` {
		t.Errorf("defaulted output %s", st.Outputs["skipped"])
	}
	if got := output(t, st, "fell")["tool"]; got != "backup" {
		t.Errorf("fell_back output from %v", got)
	}
	if got := l.keys("backup"); len(got) != 1 || got[0] != "run-1/fell/fallback/1" {
		t.Errorf("backup keys %v", got)
	}
	if !strings.Contains(stepOf(t, st, "fell").Error, "broken: failure") {
		t.Errorf("fell's absorbed error: %q", stepOf(t, st, "fell").Error)
	}
}

// TestForEach: each item is its own activity with its own key; a failed
// item's slot gets fallback_value (on_error: skip per item).
func TestForEach(t *testing.T) {
	l := newLedger()
	p := load(t, `name: each
steps:
  - id: each
    tool: item
    for_each: input.ids
    concurrency: 2
    args: {id: "{item.id}", fail: "{item.fail}"}
    on_error: skip
    fallback_value: {missing: true}
`, l.tool("item", true))
	st := newHarness(t, p).run(map[string]any{"ids": []any{
		map[string]any{"id": "a", "fail": true}, map[string]any{"id": "b", "fail": false}, map[string]any{"id": "c", "fail": false}}})
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	var outs []map[string]any
	if err := json.Unmarshal(st.Outputs["each"], &outs); err != nil || len(outs) != 3 {
		t.Fatalf("output %s: %v", st.Outputs["each"], err)
	}
	if outs[0]["missing"] != true || outs[1]["args"].(map[string]any)["id"] != "b" || outs[2]["args"].(map[string]any)["id"] != "c" {
		t.Errorf("outputs %v", outs)
	}
	if got, want := strings.Join(l.keys("item"), " "), "run-1/each[0]/1 run-1/each[1]/1 run-1/each[2]/1"; got != want {
		t.Errorf("item keys %q, want %q", got, want)
	}
	if s := stepOf(t, st, "each"); s.Status != "defaulted" || !strings.HasPrefix(s.Error, "item 0:") {
		t.Errorf("each: %+v", s)
	}
}

const approvalFlow = `name: approve
steps:
  - {id: draft, tool: ok, args: {}}
  - {id: sign, type: approval, message: "sign {draft.n}?"}
  - {id: pay, tool: pay, args: {amount: 5}, approval: required}
`

// TestApproval: the run waits; queries say what for and what may be done;
// the update's validator refuses a decision on a step that waits for
// nothing; approve lets the approval step settle, and a settle gives the
// approval-required tool step its output without calling the tool.
func TestApproval(t *testing.T) {
	l := newLedger()
	p := load(t, approvalFlow, l.tool("ok", true), l.tool("pay", false))
	h := newHarness(t, p)
	var (
		steps                             []string
		settled, unknown, approve, settle *updated
	)
	h.env.RegisterDelayedCallback(func() {
		var st Status
		h.query(QueryStatus, &st)
		if st.Status != "waiting" {
			t.Errorf("status %s, want waiting", st.Status)
		}
		var pend []Pending
		h.query(QueryPending, &pend)
		if len(pend) != 1 || pend[0].Step != "sign" || pend[0].Kind != "approval" {
			t.Errorf("pending %+v", pend)
		}
		var next []NextAction
		h.query(QueryNextActions, &next)
		if len(next) != 3 || next[0].Args.Step != "sign" || next[0].Update != UpdateDecide {
			t.Errorf("next_actions %+v", next)
		}
		settled = h.update(Decision{Step: "draft", Action: ActionApprove})
		unknown = h.update(Decision{Step: "sign", Action: "maybe"})
		approve = h.update(Decision{Step: "sign", Action: ActionApprove, By: "ana", Comment: "fine"})
		steps = append(steps, "sign")
	}, time.Minute)
	h.env.RegisterDelayedCallback(func() {
		var pend []Pending
		h.query(QueryPending, &pend)
		if len(pend) != 1 || pend[0].Step != "pay" {
			t.Errorf("pending after sign %+v", pend)
		}
		settle = h.update(Decision{Step: "pay", Action: ActionSettle, Output: json.RawMessage(`{"paid":"by hand"}`), By: "ana"})
		steps = append(steps, "pay")
	}, 2*time.Minute)
	st := h.run(map[string]any{})
	if strings.Join(steps, ",") != "sign,pay" {
		t.Fatalf("decisions made: %v", steps)
	}
	if !settled.done || settled.err == nil || !strings.Contains(settled.err.Error(), "waits for no decision") {
		t.Errorf("decision on a settled step: %+v", settled)
	}
	if !unknown.done || unknown.err == nil || !strings.Contains(unknown.err.Error(), "approve, reject or settle") {
		t.Errorf("an unknown action: %+v", unknown)
	}
	for _, u := range []*updated{approve, settle} {
		if !u.done || u.err != nil {
			t.Errorf("decision: %+v", u)
		}
	}
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if got := output(t, st, "sign"); got["approved"] != true || got["decided_by"] != "ana" {
		t.Errorf("sign output %v", got)
	}
	if string(st.Outputs["pay"]) != `{"paid":"by hand"}` || l.count("pay") != 0 {
		t.Errorf("pay output %s, called %d times", st.Outputs["pay"], l.count("pay"))
	}
}

// TestApprovalReject: a rejected approval fails its step and the run.
func TestApprovalReject(t *testing.T) {
	l := newLedger()
	p := load(t, approvalFlow, l.tool("ok", true), l.tool("pay", false))
	h := newHarness(t, p)
	var reject *updated
	h.env.RegisterDelayedCallback(func() {
		reject = h.update(Decision{Step: "sign", Action: ActionReject, By: "bo", Comment: "no"})
	}, time.Minute)
	st := h.run(map[string]any{})
	if !reject.done || reject.err != nil {
		t.Errorf("reject: %+v", reject)
	}
	if st.Status != "failed" || st.Error == nil || st.Error.Step != "sign" || st.Error.Message != "rejected by bo: no" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if l.count("pay") != 0 {
		t.Errorf("pay ran after a rejection")
	}
}
