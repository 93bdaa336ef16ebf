package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/tool"
)

const eachFlow = `name: each
inputs: {type: object, properties: {orders: {type: array}}}
steps:
  - {id: each, tool: refund, for_each: input.orders, concurrency: %d, args: {order: "{item}"}}
`

// checkCount is the number of check: activities of step id that ran.
func checkCount(seen interface{ Load(any) (any, bool) }, id string) int {
	if n, ok := seen.Load("check:" + id); ok {
		return *n.(*int)
	}
	return 0
}

// TestLostItemCheck: the worker of a for_each item's call that is not safe
// to repeat is lost after the call took effect: its tool's check: finds it
// by its key, so the item settles with the check's output, neither made
// again nor left to a person; the other items run once each.
func TestLostItemCheck(t *testing.T) {
	l := newLedger()
	var asked int
	p := load(t, strings.Replace(eachFlow, "%d", "1", 1), checked(l, "refund", &asked))
	h, seen := lossy(t, p, "tool:each")
	st := h.run(map[string]any{"orders": []any{"a", "b", "c"}})
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if got := strings.Join(l.keys("refund"), " "); got != "run-1/each[0]/1 run-1/each[1]/1 run-1/each[2]/1" || asked != 1 || checkCount(seen, "each") != 1 {
		t.Errorf("refund calls %q, checks %d (activities %d): want each item's once, one check", got, asked, checkCount(seen, "each"))
	}
	var items []map[string]any
	if err := json.Unmarshal(st.Outputs["each"], &items); err != nil || len(items) != 3 || items[0]["found"] != "run-1/each[0]/1" || items[1]["tool"] != "refund" {
		t.Errorf("each output %s: want item 0 the check's", st.Outputs["each"])
	}
}

// TestLostItemApproved: a for_each item whose worker was lost, of a tool
// without a check:, parks the step as unknown; the items that finished are
// kept, and approving it makes only the item in doubt again, at the
// step's next attempt (a new key), as a local resume does.
func TestLostItemApproved(t *testing.T) {
	l := newLedger()
	p := load(t, strings.Replace(eachFlow, "%d", "3", 1), l.tool("refund", false))
	h, seen := lossy(t, p, "tool:each")
	h.env.RegisterDelayedCallback(func() {
		var pend []Pending
		h.query(QueryPending, &pend)
		if len(pend) != 1 || pend[0].Step != "each" || pend[0].Kind != "unknown" || !strings.Contains(pend[0].Error, "worker was lost") {
			t.Errorf("pending %+v", pend)
		}
		h.update(Decision{Step: "each", Action: ActionApprove})
	}, time.Minute)
	st := h.run(map[string]any{"orders": []any{"a", "b", "c"}})
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	keys := l.keys("refund")
	var again []string
	for _, k := range keys {
		if strings.HasSuffix(k, "/2") {
			again = append(again, k)
		}
	}
	if len(keys) != 4 || len(again) != 1 || !strings.Contains(strings.Join(keys, " "), strings.TrimSuffix(again[0], "2")+"1") {
		t.Errorf("refund calls %v: want each item once at attempt 1, and the one in doubt again at attempt 2", keys)
	}
	if checkCount(seen, "each") != 0 {
		t.Errorf("a check: activity ran for a tool without one")
	}
	var items []map[string]any
	if err := json.Unmarshal(st.Outputs["each"], &items); err != nil || len(items) != 3 {
		t.Errorf("each output %s", st.Outputs["each"])
	}
}

// TestLostRoundCheck: the worker of a repeat round's call that is not safe
// to repeat is lost after the call took effect: its check: settles the
// round with its output and the loop goes on from the next round.
func TestLostRoundCheck(t *testing.T) {
	l := newLedger()
	var asked int
	p := load(t, "name: rounds\nsteps:\n  - {id: loop, tool: count, args: {i: \"{iteration}\"}, repeat: {until: \"false\", max: 3}}\n", checked(l, "count", &asked))
	h, seen := lossy(t, p, "tool:loop")
	st := h.run(map[string]any{})
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if got := strings.Join(l.keys("count"), " "); got != "run-1/loop#1/1 run-1/loop#2/1 run-1/loop#3/1" || asked != 1 || checkCount(seen, "loop") != 1 {
		t.Errorf("count calls %q, checks %d: want each round once, one check", got, asked)
	}
	if out := output(t, st, "loop"); out["n"] != float64(3) {
		t.Errorf("loop output %v, want the third round's", out)
	}
}

const fallbackFlow = `name: fb
steps:
  - {id: pay, tool: pay, args: {}, on_error: fallback, fallback: {tool: refund}}
`

// TestLostFallbackCheck: a step's fallback whose worker was lost after its
// call took effect: its check: finds it, and the step falls back with the
// check's output.
func TestLostFallbackCheck(t *testing.T) {
	l := newLedger()
	l.fails["pay"] = failPlan{n: 1, class: fault.Business}
	var asked int
	p := load(t, fallbackFlow, l.tool("pay", false), checked(l, "refund", &asked))
	h, seen := lossy(t, p, "fallback:pay")
	st := h.run(map[string]any{})
	if st.Status != "succeeded" || stepOf(t, st, "pay").Status != "fell_back" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if got := l.keys("refund"); len(got) != 1 || got[0] != "run-1/pay/fallback/1" || asked != 1 || checkCount(seen, "pay") != 1 {
		t.Errorf("refund calls %v, checks %d", got, asked)
	}
	if out := output(t, st, "pay"); out["found"] != "run-1/pay/fallback/1" {
		t.Errorf("pay output %v, want the check's", out)
	}
}

// TestLostFallbackApproved: a step's fallback whose worker was lost, whose
// check: finds it did not take effect: the step is unknown for a person,
// told so; approved, the fallback is made again with its one key, and the
// step's own call (which failed for good) is not made again.
func TestLostFallbackApproved(t *testing.T) {
	l := newLedger()
	l.fails["pay"] = failPlan{n: 1, class: fault.Business}
	var asked int
	never := tool.WithCheck(l.tool("refund", false), func(context.Context, tool.CheckRequest) (tool.CheckResult, error) {
		asked++
		return tool.CheckResult{}, nil
	})
	p := load(t, fallbackFlow, l.tool("pay", false), never)
	h, _ := lossy(t, p, "fallback:pay")
	h.env.RegisterDelayedCallback(func() {
		var pend []Pending
		h.query(QueryPending, &pend)
		if len(pend) != 1 || pend[0].Step != "pay" || pend[0].Kind != "unknown" || !strings.Contains(pend[0].Error, "did not take effect") {
			t.Errorf("pending %+v", pend)
		}
		h.update(Decision{Step: "pay", Action: ActionApprove})
	}, time.Minute)
	st := h.run(map[string]any{})
	if st.Status != "succeeded" || stepOf(t, st, "pay").Status != "fell_back" || asked != 1 {
		t.Fatalf("run: %+v %+v, checks %d", st, st.Error, asked)
	}
	if got := l.keys("refund"); len(got) != 2 || got[0] != "run-1/pay/fallback/1" || got[1] != got[0] {
		t.Errorf("refund calls %v: the lost one and the approved one, with one key", got)
	}
	if n := l.count("pay"); n != 1 {
		t.Errorf("pay made %d times: its failed call is not made again", n)
	}
}

// TestLostItemCarried: a for_each step parked in doubt continues as new
// while it waits (Temporal suggests it while an item waits for its retry),
// carrying the items that finished (Carry.Doubt); approved in the new run,
// it makes only the item in doubt again.
func TestLostItemCarried(t *testing.T) {
	l := newLedger()
	l.fails["refund"] = failPlan{n: 2, class: fault.Transient} // the lost call, then one retried
	src := strings.Replace(eachFlow, "args:", "retries: 1, backoff: {initial: 1m, max: 1m}, args:", 1)
	p := load(t, strings.Replace(src, "%d", "3", 1), l.tool("refund", false))
	in, err := StartInput(p, map[string]any{"orders": []any{"a", "b", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := lossy(t, p, "tool:each")
	h.env.RegisterDelayedCallback(func() { h.env.SetContinueAsNewSuggested(true) }, 30*time.Second)
	h.env.ExecuteWorkflow(p.Flow.Name, in)
	var can *workflow.ContinueAsNewError
	if err := h.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the waiting run did not continue as new: %v", err)
	}
	next := Start{}
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Carry == nil || next.Carry.Doubt["each"] == nil || len(next.Carry.Doubt["each"].Items) != 2 {
		t.Fatalf("carried %+v: want the two items that finished", next.Carry)
	}
	before := l.keys("refund")
	h2 := newHarness(t, p)
	h2.env.RegisterDelayedCallback(func() { h2.update(Decision{Step: "each", Action: ActionApprove}) }, time.Minute)
	h2.env.ExecuteWorkflow(p.Flow.Name, next)
	if err := h2.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var st Status
	if err := h2.env.GetWorkflowResult(&st); err != nil || st.Status != "succeeded" {
		t.Fatalf("run: %+v (%v)", st, err)
	}
	after := l.keys("refund")
	var made []string
	for _, k := range after {
		if !slices.Contains(before, k) {
			made = append(made, k)
		}
	}
	// items: one lost (attempt 1), the others made, one or both of them
	// failed once and retried (which ones fail depends on the order the
	// items' calls reach the tool); approved, only the lost item is made
	// again, at the step's next attempt.
	last := 0
	for _, k := range before {
		n, _ := strconv.Atoi(k[strings.LastIndexByte(k, '/')+1:])
		last = max(last, n)
	}
	if len(made) != 1 || len(after) != len(before)+1 || !strings.HasSuffix(made[0], "/"+strconv.Itoa(last+1)) {
		t.Errorf("refund calls %v, then %v: want the item in doubt alone made again, at attempt %d", before, after, last+1)
	}
	lost := made[0][:strings.LastIndexByte(made[0], '/')]
	for _, k := range before {
		if strings.HasPrefix(k, lost+"/") && !strings.HasSuffix(k, "/1") {
			t.Errorf("the lost item %s was made at %s before the approval: only once", lost, k)
		}
	}
}

// TestLostItemFallbackCheck: the fallback of a for_each item whose worker
// was lost after its call took effect: its check: finds it, and the item
// takes the check's output (the step fell back).
func TestLostItemFallbackCheck(t *testing.T) {
	l := newLedger()
	var asked int
	p := load(t, `name: each-fb
inputs: {type: object, properties: {orders: {type: array}}}
steps:
  - {id: each, tool: pay, for_each: input.orders, args: {fail: "{item}"}, on_error: fallback, fallback: {tool: refund}}
`, l.tool("pay", false), checked(l, "refund", &asked))
	h, seen := lossy(t, p, "fallback:each")
	st := h.run(map[string]any{"orders": []any{false, true, false}})
	if st.Status != "succeeded" || stepOf(t, st, "each").Status != "fell_back" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if got := l.keys("refund"); len(got) != 1 || got[0] != "run-1/each[1]/fallback/1" || asked != 1 || checkCount(seen, "each") != 1 {
		t.Errorf("refund calls %v, checks %d", got, asked)
	}
	var items []map[string]any
	if err := json.Unmarshal(st.Outputs["each"], &items); err != nil || len(items) != 3 || items[1]["found"] != "run-1/each[1]/fallback/1" {
		t.Errorf("each output %s: want item 1 the check's", st.Outputs["each"])
	}
}

// TestLostRoundCheckNotHappened: a repeat round whose worker was lost and
// whose check: finds it did not take effect waits for a person, told so;
// approved, the loop goes on from that round at the next attempt, the
// round before it not made again.
func TestLostRoundCheckNotHappened(t *testing.T) {
	l := newLedger()
	var asked int
	never := tool.WithCheck(l.tool("count", false), func(context.Context, tool.CheckRequest) (tool.CheckResult, error) {
		asked++
		return tool.CheckResult{}, nil
	})
	p := load(t, "name: rounds\nsteps:\n  - {id: loop, tool: count, args: {i: \"{iteration}\"}, repeat: {until: \"false\", max: 2}}\n", never)
	h, _ := lossy(t, p, "tool:loop")
	h.env.RegisterDelayedCallback(func() {
		var pend []Pending
		h.query(QueryPending, &pend)
		if len(pend) != 1 || pend[0].Step != "loop" || pend[0].Kind != "unknown" || !strings.Contains(pend[0].Error, "run-1/loop#1/1 did not take effect") {
			t.Errorf("pending %+v", pend)
		}
		h.update(Decision{Step: "loop", Action: ActionApprove})
	}, time.Minute)
	st := h.run(map[string]any{})
	if st.Status != "succeeded" || asked != 1 {
		t.Fatalf("run: %+v %+v, checks %d", st, st.Error, asked)
	}
	if got := strings.Join(l.keys("count"), " "); got != "run-1/loop#1/1 run-1/loop#1/2 run-1/loop#2/2" {
		t.Errorf("count calls %q: want round 1 lost, then made at attempt 2, and round 2", got)
	}
}
