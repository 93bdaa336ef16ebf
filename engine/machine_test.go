package engine

import (
	"slices"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

func parseMachineFlow(t *testing.T, src string) *flow.Flow {
	t.Helper()
	f, err := flow.Parse([]byte(src), "m.yaml", &flow.Options{Tools: func(name string) (tool.Spec, bool) { return tool.Spec{Name: name}, true }})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestMachineDecides drives the machine by hand: file order, the
// concurrency bound, release on settlement, skip propagation along
// explicit requires, and a failure that stops what is left.
func TestMachineDecides(t *testing.T) {
	t.Parallel()
	f := parseMachineFlow(t, `name: m
concurrency: 2
steps:
  - {id: a, tool: x, args: {}}
  - {id: b, tool: x, args: {}, requires: []}
  - {id: c, tool: x, args: {}, requires: []}
  - {id: d, tool: x, args: {}, requires: [a, b]}
  - {id: e, tool: x, args: {}, requires: [c]}
`)
	var m machine
	m.reset(f)
	m.seed()
	var started []int
	for {
		cmd, i := m.decide(len(started))
		if cmd != startStep {
			if cmd != awaitOutcome {
				t.Fatalf("command %d with two steps in flight, want awaitOutcome", cmd)
			}
			break
		}
		m.start(i, 1)
		started = append(started, i)
	}
	if !slices.Equal(started, []int{0, 1}) {
		t.Fatalf("started %v with concurrency 2, want a and b in file order", started)
	}
	m.settle(0, trace.StepSucceeded, 1, "sha-a")
	if m.waiting[3] != 1 {
		t.Fatalf("d waits on %d, want 1 (b runs)", m.waiting[3])
	}
	m.settle(1, trace.StepSkipped, 0, "")
	if i, _ := m.next(); i != 2 {
		t.Fatalf("next = %d, want c (before d, which b released later)", i)
	}
	if up := m.skippedUpstream(3); up != "b" {
		t.Fatalf("d's skipped upstream = %q, want b", up)
	}
	m.start(2, 1)
	m.settle(2, trace.StepFailed, 1, "")
	if cmd, _ := m.decide(0); cmd != finishRun {
		t.Fatalf("after a failed step, with nothing in flight: command %d, want finishRun", cmd)
	}
	m.park(4, store.KindApproval, 0)
	m.decided(4)
	if len(m.pending) != 0 {
		t.Fatalf("pending after the decision: %v", m.pending)
	}
}
