package temporal

import (
	"context"
	"slices"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/runs"
)

// EffectsView is what rein runs effects RUN --temporal prints: the calls
// of the run that touched the world, in the order their activities were
// scheduled (a later record of a key replaces the earlier one, as in a
// local run's journal), and the undos and compensations a saga made. Its
// fields are those of the local view (runs.EffectsView) but for the data
// edges, which need the run's flow loaded.
type EffectsView struct {
	RunID  string       `json:"run_id"`
	Flow   string       `json:"flow"`
	Status string       `json:"status"`
	Calls  []EffectCall `json:"calls"`
	// Remediations are the undos and compensations of a failed saga, one
	// per activity that made one, in order.
	Remediations []journal.Remediation `json:"remediations"`
}

// EffectCall is one call of EffectsView: the effect record its activity
// reported (the step, key, attempt, tool, effect class, outcome, the
// compensation that would take it back), or, for a call whose activity
// reported none (it has not returned, or its worker was lost), what the
// activity names: its step, key, attempt and, for an agent's call, tool.
type EffectCall struct {
	// EffectCall is the local view's call: Seq is the id of its
	// activity's scheduled event in its execution's history.
	runs.EffectCall
	// Status is where the call stands: dispatched (its activity scheduled
	// or running, no result yet), succeeded, failed (its outcome was not
	// ok: it may still have had its effect), or unknown (its worker was
	// lost: whether it took effect is not known).
	Status string `json:"status"`
	// Activity is its activity's type.
	Activity string `json:"activity"`
}

// The calls' statuses (EffectCall.Status).
const (
	CallDispatched = "dispatched"
	CallSucceeded  = "succeeded"
	CallFailed     = "failed"
	CallUnknown    = "unknown"
)

// Effects reads run runID's history (every execution of its workflow id)
// and returns its effects. dc is the client's data converter (its blob
// store, when it has one).
func Effects(ctx context.Context, c client.Client, dc converter.DataConverter, ns, runID string) (*EffectsView, error) {
	execs, err := ReadHistory(ctx, c, ns, runID)
	if err != nil {
		return nil, err
	}
	h, err := foldHistory(dc, runID, execs)
	if err != nil {
		return nil, err
	}
	return effectsOf(h), nil
}

// callKinds are the activity kinds whose attempt calls a tool: a call
// that has not returned is listed as dispatched (or unknown once its
// worker was lost), though its tool's effect is known only once it
// reports it.
var callKinds = map[string]bool{"tool": true, "fallback": true, "plan": true, "call": true}

// effectsOf folds h's activities into the view.
func effectsOf(h *runHistory) *EffectsView {
	v := &EffectsView{RunID: h.RunID, Flow: h.Start.Flow, Status: h.Status, Calls: []EffectCall{}, Remediations: []journal.Remediation{}}
	at := map[string]int{}
	put := func(c EffectCall) {
		if i, ok := at[c.Key]; ok {
			c.State = v.Calls[i].State
			v.Calls[i] = c
			return
		}
		at[c.Key] = len(v.Calls)
		v.Calls = append(v.Calls, c)
	}
	for _, a := range h.Activities {
		kind, name := a.kind()
		switch kind {
		case "compensate", "undo":
			m := remediationOf(a, kind)
			v.Remediations = append(v.Remediations, m)
			if i, ok := at[m.Key]; ok {
				v.Calls[i].State = m.Status
			}
			continue
		case "check":
			// a call in doubt its tool's check found had taken effect.
			if k, ok := strings.CutSuffix(a.key(), "/check"); ok && a.Out != nil && a.Out.Reconciled != nil && a.Out.Reconciled.Happened {
				if i, ok := at[k]; ok {
					v.Calls[i].Status = CallSucceeded
				}
			}
			continue
		}
		var effs []journal.Effect
		switch {
		case a.Out != nil:
			effs = a.Out.Effects
		case a.Fail != nil:
			effs = a.Fail.Effects
		}
		for _, e := range effs {
			st := CallSucceeded
			if e.Outcome != "ok" {
				st = CallFailed
			}
			put(EffectCall{EffectCall: runs.EffectCall{Seq: a.Event, Effect: e}, Status: st, Activity: a.Type})
		}
		if len(effs) > 0 || !callKinds[kind] {
			continue
		}
		var st string
		switch a.End {
		case "":
			st = CallDispatched
		case endTimedOut, endCanceled:
			if a.Started.IsZero() {
				continue // it never ran
			}
			st = CallUnknown
		default:
			// it returned and reported no call with an effect: a record of
			// its key its lost worker left (unknown) is void.
			if i, ok := at[a.key()]; ok && v.Calls[i].Status == CallUnknown && v.Calls[i].Effect.Effect == "" {
				v.Calls[i].Status = ""
			}
			continue
		}
		e := journal.Effect{StepID: h.stepID(a.In.Step), Key: a.key(), Attempt: a.In.Attempt, Fallback: a.In.Fallback, Round: a.In.Round}
		if a.In.Item >= 0 && kind != "call" {
			item := a.In.Item
			e.Item = &item
		}
		if kind == "call" {
			e.Tool = name
		}
		put(EffectCall{EffectCall: runs.EffectCall{Seq: a.Event, Effect: e}, Status: st, Activity: a.Type})
	}
	v.Calls = slices.DeleteFunc(v.Calls, func(c EffectCall) bool { return c.Status == "" })
	return v
}

// remediationOf is the remediation record of a compensate or undo
// activity: the call it takes back and how it ended.
func remediationOf(a *activityRec, kind string) journal.Remediation {
	m := journal.Remediation{Premise: "saga", Action: kind, Key: a.key()}
	if e := a.In.Effect; e != nil {
		m.Key, m.StepID, m.Tool, m.Call = e.Key, e.StepID, e.Tool, e.Compensation
	}
	switch a.End {
	case "":
		m.Status = runs.StateDispatched
	case endCompleted:
		m.Status = journal.RemedyDone
	case endFailed:
		m.Status = journal.RemedyFailed
		if a.Fail != nil {
			m.Error = a.Fail.Message
		}
	default:
		m.Status = journal.RemedyUnknown
		if a.Fail != nil {
			m.Error = a.Fail.Message
		}
	}
	return m
}
