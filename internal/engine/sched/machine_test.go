package sched

import (
	"context"
	"slices"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
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
	m := New(f, "r")
	m.Seed()
	var started []int
	for {
		cmd := m.Next(len(started))
		if cmd.Op != Start {
			if cmd.Op != Await {
				t.Fatalf("command %d with two steps in flight, want Await", cmd.Op)
			}
			break
		}
		m.Start(cmd.Step, 1)
		started = append(started, cmd.Step)
	}
	if !slices.Equal(started, []int{0, 1}) {
		t.Fatalf("started %v with concurrency 2, want a and b in file order", started)
	}
	m.Settle(0, journal.StepSucceeded, 1, "sha-a")
	if m.Waiting(3) != 1 {
		t.Fatalf("d waits on %d, want 1 (b runs)", m.Waiting(3))
	}
	m.Settle(1, journal.StepSkipped, 0, "")
	if cmd := m.Next(0); cmd.Step != 2 {
		t.Fatalf("next = %d, want c (before d, which b released later)", cmd.Step)
	}
	if up := m.SkippedUpstream(3); up != "b" {
		t.Fatalf("d's skipped upstream = %q, want b", up)
	}
	if a := m.Admit(context.Background(), 3, nil); a.Verdict != Skip || a.Reason != "upstream step b was skipped" {
		t.Fatalf("Admit(d) = %+v, want a skip naming b", a)
	}
	m.Start(2, 1)
	m.Settle(2, journal.StepFailed, 1, "")
	if cmd := m.Next(0); cmd.Op != Finish {
		t.Fatalf("after a failed step, with nothing in flight: command %d, want Finish", cmd.Op)
	}
	m.Park(4, store.KindApproval, 0)
	m.Decided(4)
	if len(m.Pending()) != 0 {
		t.Fatalf("pending after the decision: %v", m.Pending())
	}
}

// TestAnswer pins what a step's latest approval makes of it at dispatch.
func TestAnswer(t *testing.T) {
	t.Parallel()
	f := parseMachineFlow(t, `name: a
steps:
  - {id: plain, tool: x, args: {}}
  - {id: ok, type: approval}
  - {id: send, tool: x, args: {}, approval: required}
  - {id: parse, skill: parse}
`)
	m := New(f, "r")
	m.Park(2, store.KindUnknown, 3)
	for _, c := range []struct {
		step int
		a    Answered
		want Answer
	}{
		{0, Answered{}, Answer{Do: RunIt}},
		{1, Answered{}, Answer{Do: AskPerson}},
		{1, Answered{Status: store.ApprovalPending, Kind: store.KindApproval}, Answer{Do: AskPerson}},
		{1, Answered{Status: store.ApprovalApproved, Kind: store.KindApproval}, Answer{Do: Approve, Decided: true}},
		{2, Answered{Status: store.ApprovalApproved, Kind: store.KindApproval}, Answer{Do: RunApproved, Decided: true}},
		{2, Answered{Status: store.ApprovalApproved, Kind: store.KindUnknown}, Answer{Do: RunAgain, Attempt: 4, Decided: true}},
		{2, Answered{Status: store.ApprovalRejected, Kind: store.KindEscalation}, Answer{Do: Reject, Escalated: true, Decided: true}},
		{2, Answered{Status: store.ApprovalSettled, Kind: store.KindUnknown}, Answer{Do: SettleOutput, Decided: true}},
		{2, Answered{Status: store.ApprovalApproved, Kind: store.KindPremise}, Answer{Do: RunAgain, Attempt: 4, Decided: true}},
		{2, Answered{Status: store.ApprovalRejected, Kind: store.KindPremise}, Answer{Do: Reject, Escalated: true, Decided: true}},
		{2, Answered{Status: store.ApprovalSettled, Kind: store.KindPremise}, Answer{Do: SettleOutput, Decided: true}},
		{3, Answered{}, Answer{Do: AskAgent}},
		{3, Answered{Status: store.ApprovalApproved, Kind: store.KindSubmission}, Answer{Do: AskAgent}},
		{3, Answered{Status: store.ApprovalSettled, Kind: store.KindSubmission}, Answer{Do: SettleOutput, Decided: true}},
	} {
		if got := m.Answer(c.step, c.a); got != c.want {
			t.Errorf("step %s answered %+v: %+v, want %+v", f.Steps[c.step].ID, c.a, got, c.want)
		}
	}
}

// TestPremiseHoldsTheRun: a step parked on a failed premise pauses the
// whole run — an independent branch that has not started is not started,
// a step in flight settles — and the decision lifts it; a replay of the
// journal up to the park is paused the same way, and dispatches nothing.
func TestPremiseHoldsTheRun(t *testing.T) {
	t.Parallel()
	f := parseMachineFlow(t, `name: p
concurrency: 1
steps:
  - {id: lookup, tool: x, args: {}}
  - {id: save, tool: x, args: {}, requires: [lookup]}
  - {id: audit, tool: x, args: {}, requires: []}
  - {id: notify, tool: x, args: {}, requires: []}
`)
	m := New(f, "r")
	m.Seed()
	if cmd := m.Next(0); cmd.Op != Start || cmd.Step != 0 {
		t.Fatalf("first command %+v, want Start lookup", cmd)
	}
	m.Start(0, 1)
	m.Park(0, store.KindPremise, 1)
	if !m.Held() || len(m.Premises()) != 1 || m.Premises()[0].ID != "lookup" {
		t.Fatalf("held %v, premises %v: want the run paused on lookup", m.Held(), m.Premises())
	}
	if cmd := m.Next(0); cmd.Op != Finish {
		t.Fatalf("paused with nothing in flight: command %+v, want Finish (audit and notify are independent but must not start)", cmd)
	}
	if st := m.Outcome(false, "", false); st != journal.RunWaiting {
		t.Fatalf("outcome %s, want waiting", st)
	}
	if m.Ready() != 2 {
		t.Fatalf("ready %d, want audit and notify still queued", m.Ready())
	}
	// a replay of the same journal is paused the same way.
	r := New(f, "r")
	err := r.Replay([]*journal.Event{
		{Seq: 1, Kind: journal.RunStarted},
		{Seq: 2, Kind: journal.StepStarted, StepID: "lookup", Attempt: 1},
		{Seq: 3, Kind: journal.ApprovalRequested, StepID: "lookup", Attempt: 1, Decision: string(store.KindPremise)},
		{Seq: 4, Kind: journal.RunParked},
	})
	if err != nil {
		t.Fatal(err)
	}
	if cmd := r.Next(0); !r.Held() || cmd.Op != Finish {
		t.Fatalf("replayed: held %v, command %+v; want paused, nothing dispatched", r.Held(), cmd)
	}
	// the person decides: the hold lifts and the paused branches go on.
	m.Requeue(0)
	m.Recount()
	m.Seed()
	var started []string
	for cmd := m.Next(0); cmd.Op == Start; cmd = m.Next(0) {
		started = append(started, f.Steps[cmd.Step].ID)
		m.Start(cmd.Step, 1)
		m.Settle(cmd.Step, journal.StepSucceeded, 1, "sha")
	}
	if !slices.Equal(started, []string{"lookup", "audit", "notify", "save"}) {
		t.Fatalf("after the decision started %v, want every step", started)
	}
}

// TestEscalationDoesNotHold: an escalation that is not a premise parks
// only its step; independent steps go on.
func TestEscalationDoesNotHold(t *testing.T) {
	t.Parallel()
	f := parseMachineFlow(t, `name: e
steps:
  - {id: a, tool: x, args: {}}
  - {id: b, tool: x, args: {}, requires: []}
`)
	m := New(f, "r")
	m.Seed()
	m.Next(0)
	m.Start(0, 1)
	m.Park(0, store.KindEscalation, 1)
	if cmd := m.Next(0); m.Held() || cmd.Op != Start || cmd.Step != 1 {
		t.Fatalf("held %v, command %+v: want b started", m.Held(), cmd)
	}
}

// TestUnitsHeldByAPremise: a step in flight starts no further unit while
// a premise waits undecided, goes on once it is approved, stops once one
// is rejected (even while another still waits); an escalation holds
// nothing.
func TestUnitsHeldByAPremise(t *testing.T) {
	t.Parallel()
	f := parseMachineFlow(t, `name: u
steps:
  - {id: a, tool: x, args: {}}
  - {id: b, tool: x, args: {}, requires: []}
  - {id: each, tool: x, args: {}, requires: []}
`)
	m := New(f, "r")
	decided, rejected := map[int]bool{}, map[int]bool{}
	gate := func() UnitGate {
		return m.Units(func(i int) bool { return decided[i] }, func(i int) bool { return rejected[i] })
	}
	if g := gate(); g != UnitsGo {
		t.Fatalf("no approval: gate %d, want UnitsGo", g)
	}
	m.Park(1, store.KindEscalation, 1)
	if g := gate(); g != UnitsGo {
		t.Fatalf("an escalation: gate %d, want UnitsGo", g)
	}
	m.Park(0, store.KindPremise, 1)
	if g := gate(); g != UnitsWait {
		t.Fatalf("a premise undecided: gate %d, want UnitsWait", g)
	}
	decided[0] = true
	if g := gate(); g != UnitsGo {
		t.Fatalf("the premise approved: gate %d, want UnitsGo", g)
	}
	m.Park(2, store.KindPremise, 1)
	if g := gate(); g != UnitsWait {
		t.Fatalf("a second premise undecided: gate %d, want UnitsWait", g)
	}
	decided[0], rejected[0] = true, true
	if g := gate(); g != UnitsStop {
		t.Fatalf("one premise rejected, another undecided: gate %d, want UnitsStop", g)
	}
}
