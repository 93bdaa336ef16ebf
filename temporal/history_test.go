package temporal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/journal"
)

// committed reads the committed history RUN.json (recorded from a real
// server), its events up to the first for which stop says so (nil: all).
func committed(t *testing.T, run string, stop func(*historypb.HistoryEvent) bool) []Execution {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "histories", run+".json"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := client.HistoryFromJSON(bytes.NewReader(data), client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs := h.GetEvents()
	for i, ev := range evs {
		if stop != nil && stop(ev) {
			evs = evs[:i]
			break
		}
	}
	return []Execution{{RunID: "r1", Events: evs}}
}

func fold(t *testing.T, dc converter.DataConverter, run string, execs []Execution) *runHistory {
	t.Helper()
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	h, err := foldHistory(dc, run, execs)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHistoryEffectsSaga: the committed saga run (its charge compensated
// by a refund that was declined, escalated, approved and made again; its
// ship step failed) reads as rein runs effects shows a local run: the
// charge with its effect class, compensation and state done, the failed
// ship call, and the two remediations in order.
func TestHistoryEffectsSaga(t *testing.T) {
	v := effectsOf(fold(t, nil, "run-saga", committed(t, "run-saga", nil)))
	if v.Flow != "saga" || v.Status != "failed" || len(v.Calls) != 2 {
		t.Fatalf("view %+v", v)
	}
	take, ship := v.Calls[0], v.Calls[1]
	if take.Key != "run-saga/take/1" || take.StepID != "take" || take.Attempt != 1 || take.Tool != "charge" || take.Effect.Effect != "external" ||
		take.Status != CallSucceeded || take.State != journal.RemedyDone || take.Compensation == nil || take.Compensation.Tool != "refund" || take.Activity != "tool:take" {
		t.Errorf("take %+v", take)
	}
	if ship.Key != "run-saga/ship/1" || ship.Tool != "ship" || ship.Effect.Effect != "write" || ship.Status != CallFailed || ship.Outcome == "ok" || ship.State != "" {
		t.Errorf("ship %+v", ship)
	}
	if len(v.Remediations) != 2 {
		t.Fatalf("remediations %+v", v.Remediations)
	}
	first, again := v.Remediations[0], v.Remediations[1]
	if first.Key != take.Key || first.Action != "compensate" || first.Status != journal.RemedyFailed || !strings.Contains(first.Error, "declined") ||
		again.Key != take.Key || again.Status != journal.RemedyDone || again.Call == nil || again.Call.Tool != "refund" {
		t.Errorf("remediations %+v", v.Remediations)
	}
	// the same history cut before the ship step returned: the run is
	// open, the call dispatched (its tool not known yet), the charge not
	// remedied.
	cut := committed(t, "run-saga", func(ev *historypb.HistoryEvent) bool {
		return ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED && ev.GetEventId() > 7
	})
	v = effectsOf(fold(t, nil, "run-saga", cut))
	if v.Status != "running" || len(v.Calls) != 2 || v.Calls[1].Key != "run-saga/ship/1" || v.Calls[1].Status != CallDispatched ||
		v.Calls[1].StepID != "ship" || v.Calls[1].Tool != "" || v.Calls[0].State != "" || len(v.Remediations) != 0 {
		t.Errorf("the cut history: %+v", v)
	}
}

// TestHistoryEffectsLost: in the committed takeover run (recorded before
// every attempt reported its effects) the charge whose worker was killed
// is unknown; the idempotent call run again with its key, which came back,
// is not listed, nor are the calls that returned without an effect record.
func TestHistoryEffectsLost(t *testing.T) {
	v := effectsOf(fold(t, nil, "run-kill", committed(t, "run-kill", nil)))
	if len(v.Calls) != 1 {
		t.Fatalf("calls %+v", v.Calls)
	}
	if c := v.Calls[0]; c.Key != "run-kill/charge/1" || c.StepID != "charge" || c.Status != CallUnknown || c.Attempt != 1 {
		t.Errorf("charge %+v", c)
	}
	if v := effectsOf(fold(t, nil, "run-approve", committed(t, "run-approve", nil))); len(v.Calls) != 0 || v.Status != "succeeded" {
		t.Errorf("run-approve: %+v", v)
	}
}

// TestHistorySessions: the committed agent run's transcript as the
// workflow held it: turn 1's two calls, turn 2's call approved by a person
// (its decision kept) and made, turn 3's answer; cut after its first turn
// returned, the transcript holds that turn with its calls chosen.
func TestHistorySessions(t *testing.T) {
	ss := sessionsOf(fold(t, nil, "run-agent", committed(t, "run-agent", nil)))
	if len(ss) != 1 || ss[0].Step != "agent" || ss[0].Attempt != 1 || len(ss[0].Turns) != 3 {
		t.Fatalf("sessions %+v", ss)
	}
	turns := ss[0].Turns
	if len(turns[0].Calls) != 2 || turns[0].Calls[0].Status != agent.StatusOK || turns[0].Calls[1].Status != agent.StatusOK {
		t.Errorf("turn 1 %+v", turns[0])
	}
	if c := turns[1].Calls; len(c) != 1 || c[0].Tool != "pay" || c[0].Status != agent.StatusOK || c[0].Key != "run-agent/agent/1/turn2/call1" {
		t.Errorf("turn 2 %+v", turns[1])
	}
	if d, ok := ss[0].Decisions["turn2/call1"]; !ok || d.Verdict != agent.Approve {
		t.Errorf("decisions %+v", ss[0].Decisions)
	}
	if !turns[2].Final || !strings.Contains(turns[2].Text, "paid 5") {
		t.Errorf("turn 3 %+v", turns[2])
	}
	completed := 0
	cut := committed(t, "run-agent", func(ev *historypb.HistoryEvent) bool {
		if ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED {
			completed++
		}
		return completed == 2 // stop at the first call's result
	})
	ss = sessionsOf(fold(t, nil, "run-agent", cut))
	if len(ss) != 1 || len(ss[0].Turns) != 1 || len(ss[0].Turns[0].Calls) != 2 || ss[0].Turns[0].Calls[0].Status != agent.StatusChosen {
		t.Errorf("the cut history: %+v", ss)
	}
	// the killed agent's call, reconciled by its tool's check.
	ss = sessionsOf(fold(t, nil, "run-agentkill", committed(t, "run-agentkill", nil)))
	if len(ss) != 1 || len(ss[0].Turns) < 1 || ss[0].Turns[0].Calls[0].Reconciled == "" || ss[0].Turns[0].Calls[0].Status != agent.StatusOK {
		t.Errorf("run-agentkill: %+v", ss)
	}
}

// TestHistoryKeys: an activity's id names its call's key without the ~n
// of a rerun and the #n of a compensation made again; a repeat round's #n
// stays.
func TestHistoryKeys(t *testing.T) {
	for id, want := range map[string]string{
		"r/s/1": "r/s/1", "r/s/1~2": "r/s/1", "r/take/1/compensate#2": "r/take/1/compensate", "r/take/1/undo#3~1": "r/take/1/undo",
		"r/loop#2/1": "r/loop#2/1", "r/a/1/turn1/call1~1": "r/a/1/turn1/call1", "r~x/s/1": "r~x/s/1",
	} {
		if got := (&activityRec{ID: id}).key(); got != want {
			t.Errorf("key of %q = %q, want %q", id, got, want)
		}
	}
}

// synthetic is a history of one execution: a started workflow and, per
// activity, its scheduled event and, when out or fail is given, its
// started and closed events; the payloads made with dc.
type synthAct struct {
	typ, id string
	in      attemptIn
	out     *attemptOut
	timeout bool
}

func synthetic(t *testing.T, dc converter.DataConverter, acts ...synthAct) []Execution {
	t.Helper()
	at := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	var evs []*historypb.HistoryEvent
	add := func(ev *historypb.HistoryEvent) int64 {
		ev.EventId = int64(len(evs) + 1)
		ev.EventTime = timestamppb.New(at.Add(time.Duration(ev.EventId) * time.Second))
		evs = append(evs, ev)
		return ev.EventId
	}
	pay := func(v any) *commonpb.Payloads {
		p, err := dc.ToPayloads(v)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	add(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{
		WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{Input: pay(Start{Flow: "f"})}}})
	for _, a := range acts {
		s := add(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{
			ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{ActivityId: a.id, ActivityType: &commonpb.ActivityType{Name: a.typ}, Input: pay(a.in)}}})
		if a.out == nil && !a.timeout {
			continue
		}
		add(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, Attributes: &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{
			ActivityTaskStartedEventAttributes: &historypb.ActivityTaskStartedEventAttributes{ScheduledEventId: s}}})
		if a.timeout {
			add(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, Attributes: &historypb.HistoryEvent_ActivityTaskTimedOutEventAttributes{
				ActivityTaskTimedOutEventAttributes: &historypb.ActivityTaskTimedOutEventAttributes{ScheduledEventId: s}}})
			continue
		}
		add(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{
			ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{ScheduledEventId: s, Result: pay(a.out)}}})
	}
	return []Execution{{RunID: "r1", Events: evs}}
}

// TestHistoryBlobs: a history whose payloads the blob store holds reads
// through the client's blob converter (the effect record and the agent's
// turn resolve); without the store, the reader says which event it could
// not read.
func TestHistoryBlobs(t *testing.T) {
	dc := NewBlobConverter(&BlobCodec{Dir: t.TempDir(), Threshold: 16})
	long := strings.Repeat("x", 4096)
	eff := journal.Effect{StepID: "pay", Key: "r/pay/1", Attempt: 1, Tool: "charge", Effect: "external", Outcome: "ok", Tags: []string{long}}
	execs := synthetic(t, dc,
		synthAct{typ: "tool:pay", id: "r/pay/1", in: attemptIn{Step: 0, Attempt: 1, Item: -1}, out: &attemptOut{Output: json.RawMessage(`{}`), Effects: []journal.Effect{eff}}},
		synthAct{typ: "agent:ask", id: "r/ask/1/turn1", in: attemptIn{Step: 1, Attempt: 1, Item: -1, Agent: &agentIn{}},
			out: &attemptOut{Agent: &agentOut{Status: "answered", Turns: []agent.Turn{{N: 1, Text: long, Final: true}}}}},
		synthAct{typ: "call:refund", id: "r/ask/1/turn2/call1", in: attemptIn{Step: 1, Attempt: 1, Item: -1, Agent: &agentIn{}}, timeout: true},
		synthAct{typ: "tool:ship", id: "r/ship/1", in: attemptIn{Step: 2, Attempt: 1, Item: -1}})
	h := fold(t, dc, "r", execs)
	v := effectsOf(h)
	if len(v.Calls) != 3 || v.Calls[0].Tags[0] != long || v.Calls[0].Status != CallSucceeded {
		t.Fatalf("calls %+v", v.Calls)
	}
	if c := v.Calls[1]; c.Key != "r/ask/1/turn2/call1" || c.Tool != "refund" || c.StepID != "ask" || c.Status != CallUnknown {
		t.Errorf("the lost call %+v", c)
	}
	if c := v.Calls[2]; c.Key != "r/ship/1" || c.StepID != "ship" || c.Status != CallDispatched || c.Item != nil {
		t.Errorf("the dispatched call %+v", c)
	}
	if ss := sessionsOf(h); len(ss) != 1 || ss[0].Step != "ask" || len(ss[0].Turns) != 1 || ss[0].Turns[0].Text != long {
		t.Errorf("sessions %+v", ss)
	}
	_, err := foldHistory(converter.GetDefaultDataConverter(), "r", execs)
	if err == nil || !strings.Contains(err.Error(), "workflow r, run r1, event 1: workflow input") {
		t.Errorf("read without the blob store: %v", err)
	}
}

// TestHistoryTrace: the committed runs summarised as rein runs trace
// summarises a journal: the saga's failed ship step and its failure, the
// features run's retried charge step, the agent's tokens and model calls
// summed from its turns, each step's attempts.
func TestHistoryTrace(t *testing.T) {
	now := time.Now()
	sum := traceOf(fold(t, nil, "run-saga", committed(t, "run-saga", nil)), now)
	r := sum.Runs[0]
	if r.Status != "failed" || r.Failure == nil || len(r.Steps) != 2 || r.Steps[1].StepID != "ship" || r.Steps[1].Status != "failed" ||
		r.Steps[1].Failure == nil || r.Steps[1].Failure.Class == "" || r.Steps[0].Type != "tool" || r.Duration <= 0 {
		t.Errorf("run-saga %+v", r)
	}
	r = traceOf(fold(t, nil, "run-features", committed(t, "run-features", nil)), now).Runs[0]
	for _, s := range r.Steps {
		if s.StepID == "charge" && (s.Attempts != 2 || s.Retries != 1 || len(s.Failures) != 1) {
			t.Errorf("charge %+v", s)
		}
	}
	r = traceOf(fold(t, nil, "run-agent", committed(t, "run-agent", nil)), now).Runs[0]
	in, calls := 0, 0
	for _, s := range sessionsOf(fold(t, nil, "run-agent", committed(t, "run-agent", nil)))[0].Turns {
		in += s.Usage.In
		calls += s.LLMCalls
	}
	if len(r.Steps) != 1 || r.Steps[0].Type != "agent" || r.TokensIn != in || in == 0 || r.ModelCalls != calls || r.Steps[0].Status != "succeeded" {
		t.Errorf("run-agent %+v", r)
	}
	// cut while its second turn's call runs: still running, to now.
	cut := committed(t, "run-agent", func(ev *historypb.HistoryEvent) bool { return ev.GetEventId() > 30 })
	if r := traceOf(fold(t, nil, "run-agent", cut), now).Runs[0]; r.Status != "running" || r.Steps[0].Status != "running" {
		t.Errorf("the cut run-agent %+v", r)
	}
}

// TestHistoryRecorded: the histories TestRunsHistoryViews recorded, where
// every attempt reports its calls' effects: the three tool steps' calls
// and the agent's three calls, each with its tool, effect class, status
// and place; the agent's transcript with the person's decision.
func TestHistoryRecorded(t *testing.T) {
	v := effectsOf(fold(t, nil, "run-fx-tools", committed(t, "run-fx-tools", nil)))
	if v.Status != "succeeded" || len(v.Calls) != 3 {
		t.Fatalf("run-fx-tools %+v", v)
	}
	for _, c := range v.Calls {
		if c.Effect.Effect != "write" || c.Status != CallSucceeded || c.Key != "run-fx-tools/"+c.StepID+"/1" || c.Seq <= 0 || c.ArgsSHA == "" {
			t.Errorf("call %+v", c)
		}
	}
	h := fold(t, nil, "run-fx-agent", committed(t, "run-fx-agent", nil))
	v = effectsOf(h)
	if len(v.Calls) != 3 {
		t.Fatalf("run-fx-agent %+v", v)
	}
	for i, want := range []struct {
		tool       string
		turn, call int
	}{{"ok", 1, 1}, {"ok", 1, 2}, {"pay", 2, 1}} {
		c := v.Calls[i]
		if c.Tool != want.tool || c.Turn != want.turn || c.Call != want.call || c.StepID != "agent" || c.Status != CallSucceeded || c.Activity != "call:"+want.tool ||
			c.Key != fmt.Sprintf("run-fx-agent/agent/1/turn%d/call%d", want.turn, want.call) {
			t.Errorf("call %d: %+v", i, c)
		}
	}
	ss := sessionsOf(h)
	if len(ss) != 1 || len(ss[0].Turns) != 3 || ss[0].Decisions["turn2/call1"].Comment != "ok to pay" || ss[0].Turns[1].Calls[0].Status != agent.StatusOK {
		t.Errorf("sessions %+v", ss)
	}
}
