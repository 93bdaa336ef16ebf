package engine

import (
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// An agent's call is journaled as one call record (journal.Call, a call
// event): what the pipeline saw of it (gate, effect, outcome, timing, the
// whole output of a cut observation) and, in Call.Agent, what the loop
// keeps of it (journal.AgentRecord). Journals of version 1, and runs of
// version 2 written before the record carried Agent, hold the loop's part
// as an agent_call event (Data: the agent.Call as JSON); AgentCallOf reads
// both, so the transcript folds (restoreSession, the views) read old and
// new journals alike. A turn is a journal.Turn (Event.AgentTurn) whose
// calls are call records of the same shape, as the turn chose them; before
// journal version 4 it was the agent.Turn as JSON in Event.Data, which
// turnOf reads too.

// agentStatus is the call record's status of an agent call in the loop's
// status: a chosen call (running, or in doubt) is started, an unknown one
// too (nobody knows its outcome).
func agentStatus(s agent.CallStatus) store.CallStatus {
	switch s {
	case agent.StatusOK:
		return store.CallSucceeded
	case agent.StatusWaiting:
		return store.CallWaiting
	case agent.StatusChosen, agent.StatusUnknown:
		return store.CallStarted
	}
	return store.CallFailed
}

// agentRecordOf is the loop's part of c's call record.
func agentRecordOf(c *agent.Call) (*journal.AgentRecord, error) {
	a := &journal.AgentRecord{ID: c.ID, Args: c.Args, Status: string(c.Status), Observation: c.Observation, Blob: c.Blob,
		Reason: c.Reason, Rule: c.Rule}
	for _, u := range c.Consumed {
		a.Consumed = append(a.Consumed, journal.AgentConsumed{ID: u.ID, Ref: u.Ref})
	}
	var err error
	if a.Plan, err = rawOf(c.Plan, c.Plan == nil); err != nil {
		return nil, err
	}
	if a.PlanRun, err = rawOf(c.PlanRun, c.PlanRun == nil); err != nil {
		return nil, err
	}
	if a.Provenance, err = rawOf(c.Provenance, len(c.Provenance) == 0); err != nil {
		return nil, err
	}
	if a.Verified, err = rawOf(c.Verified, len(c.Verified) == 0); err != nil {
		return nil, err
	}
	if a.Declaration, err = rawOf(c.Declaration, c.Declaration == nil); err != nil {
		return nil, err
	}
	if a.Claims, err = rawOf(c.Claims, len(c.Claims) == 0); err != nil {
		return nil, err
	}
	if a.Sub, err = rawOf(c.Sub, c.Sub == nil); err != nil {
		return nil, err
	}
	return a, nil
}

func rawOf(v any, empty bool) (json.RawMessage, error) {
	if empty {
		return nil, nil
	}
	return json.Marshal(v)
}

// agentCallOf is the agent's call a call record with an Agent part holds.
func agentCallOf(cl *journal.Call) (agent.Call, error) {
	a := cl.Agent
	c := agent.Call{Index: cl.Index, ID: a.ID, Tool: cl.Name, Args: a.Args, Status: agent.CallStatus(a.Status), Key: cl.Key,
		Observation: a.Observation, Blob: a.Blob, Reason: a.Reason, ArgsSHA: cl.ArgsSHA, Rule: a.Rule}
	for _, u := range a.Consumed {
		c.Consumed = append(c.Consumed, agent.Consumed{ID: u.ID, Ref: u.Ref})
	}
	for _, f := range []struct {
		raw json.RawMessage
		to  any
	}{{a.Plan, &c.Plan}, {a.PlanRun, &c.PlanRun}, {a.Provenance, &c.Provenance}, {a.Verified, &c.Verified},
		{a.Declaration, &c.Declaration}, {a.Claims, &c.Claims}, {a.Sub, &c.Sub}} {
		if len(f.raw) == 0 {
			continue
		}
		if err := json.Unmarshal(f.raw, f.to); err != nil {
			return c, err
		}
	}
	return c, nil
}

// AgentCallOf is the agent's call an event records, with its turn: a call
// event's record with an Agent part, or an agent_call event's (journal
// version 1, and version 2 before the record carried it). ok is false for
// any other event; err names a record that does not decode.
func AgentCallOf(ev *trace.Event) (c agent.Call, turn int, ok bool, err error) {
	switch {
	case ev.Kind == trace.CallRecorded && ev.Call != nil && ev.Call.Agent != nil:
		c, err = agentCallOf(ev.Call)
		turn = ev.Call.Turn
	case ev.Kind == trace.AgentCall:
		err = json.Unmarshal([]byte(ev.Data), &c)
		turn = ev.Turn
	default:
		return c, 0, false, nil
	}
	if err != nil {
		return c, turn, true, fmt.Errorf("run %s: the agent call of event %d (%s) of step %s does not decode: %w", ev.RunID, ev.Seq, ev.Kind, ev.StepID, err)
	}
	return c, turn, true, nil
}

// turnRecordOf is the journal's record of turn t of attempt of step
// stepID (its tokens are its event's): each call a call record as it
// stood when the turn committed.
func turnRecordOf(stepID string, attempt int, t *agent.Turn) (*journal.Turn, error) {
	rec := &journal.Turn{N: t.N, Text: t.Text, LLMCalls: t.LLMCalls, Final: t.Final}
	if c := t.Context; c != nil {
		rec.Context = &journal.TurnContext{Strategy: c.Strategy, Dropped: c.Dropped, Summary: c.Summary, Tokens: c.Tokens}
	}
	for _, g := range t.Guard {
		rec.Guard = append(rec.Guard, journal.TurnGuard{Name: g.Name, Side: g.Side, Reason: g.Reason})
	}
	var err error
	if rec.Answer, err = rawOf(t.Answer, t.Answer == nil); err != nil {
		return nil, err
	}
	if len(t.Calls) > 0 {
		rec.Calls = make([]journal.Call, len(t.Calls))
	}
	for i := range t.Calls {
		c := &t.Calls[i]
		ag, err := agentRecordOf(c)
		if err != nil {
			return nil, err
		}
		rec.Calls[i] = journal.Call{StepID: stepID, Key: c.Key, Item: -1, Turn: t.N, Index: c.Index, Attempt: attempt,
			Kind: journal.CallTool, Name: c.Tool, Status: agentStatus(c.Status), ArgsSHA: c.ArgsSHA, Reconciled: c.Reconciled, Agent: ag}
	}
	return rec, nil
}

// turnOf is the turn an agent_turn event records: its typed record, or
// the agent.Turn as JSON in its Data (journals before version 4).
func turnOf(ev *trace.Event) (agent.Turn, error) {
	rec := ev.AgentTurn
	if rec == nil {
		var t agent.Turn
		err := json.Unmarshal([]byte(ev.Data), &t)
		return t, err
	}
	t := agent.Turn{N: rec.N, Text: rec.Text, LLMCalls: rec.LLMCalls, Final: rec.Final,
		Usage: model.Usage{In: ev.TokensIn, Out: ev.TokensOut}}
	if c := rec.Context; c != nil {
		t.Context = &agent.Compaction{Strategy: c.Strategy, Dropped: c.Dropped, Summary: c.Summary, Tokens: c.Tokens}
	}
	for _, g := range rec.Guard {
		t.Guard = append(t.Guard, agent.GuardTrip{Name: g.Name, Side: g.Side, Reason: g.Reason})
	}
	if len(rec.Answer) > 0 {
		if err := json.Unmarshal(rec.Answer, &t.Answer); err != nil {
			return t, err
		}
	}
	if len(rec.Calls) > 0 {
		t.Calls = make([]agent.Call, len(rec.Calls))
	}
	for i := range rec.Calls {
		cl := &rec.Calls[i]
		if cl.Agent == nil {
			return t, fmt.Errorf("call %d of the turn has no agent record", i+1)
		}
		c, err := agentCallOf(cl)
		if err != nil {
			return t, err
		}
		c.Reconciled = cl.Reconciled
		t.Calls[i] = c
	}
	return t, nil
}
