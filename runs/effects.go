package runs

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// EffectsView is a run's effect graph as its journal recorded it: every
// call of a tool with an effect, in the order the calls returned, what each
// read, wrote and sent, where its arguments came from and the
// compensation that applies; the data edges between the calls; and what
// was done about them since (remediations).
type EffectsView struct {
	RunID  string          `json:"run_id"`
	Flow   string          `json:"flow"`
	Status trace.RunStatus `json:"status"`
	Calls  []EffectCall    `json:"calls"`
	// Data are the data edges between calls: the step of To reads (or
	// explicitly requires) the step of From, directly or through steps
	// without effects.
	Data []DataEdge `json:"data"`
	// Remediations are the remediation records, in journal order.
	Remediations []journal.Remediation `json:"remediations"`
}

// EffectCall is one call of the effect graph.
type EffectCall struct {
	// Seq is the journal sequence number of its record.
	Seq int64 `json:"seq"`
	journal.Effect
	// State is what the latest remediation made of it (done, frozen,
	// failed, escalated, unknown, resolved), or "dispatched" while its
	// undo or compensation was sent and its outcome is not recorded (in
	// doubt: the process stopped; the next remediate or resume decides);
	// "" while nothing was.
	State string `json:"state,omitempty"`
}

// DataEdge is a data dependency between two calls, by their keys.
type DataEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Effects returns the effect graph of the run ref names (rein runs
// effects, rein graph --run). Errors as Get; the data edges need the
// run's pinned flow (project.LoadPinned), so a run whose flow does not load is an
// error naming why.
func (r *Reader) Effects(ctx context.Context, ref string) (*EffectsView, error) {
	run, p, err := r.Load(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	events, err := r.st.Events(ctx, run.ID, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("journal of run %s: %w", run.ID, err)
	}
	return effectsView(run, p.Flow, events)
}

// effectsView folds events into the view.
func effectsView(run *store.Run, f *flow.Flow, events []*trace.Event) (*EffectsView, error) {
	v := &EffectsView{RunID: run.ID, Flow: run.Flow, Status: run.Status, Calls: []EffectCall{}, Data: []DataEdge{}, Remediations: []journal.Remediation{}}
	at := map[string]int{}
	remedied := map[string]int64{} // key → seq of its latest remediation record
	sent := map[string]dispatch{}  // key → its undo or compensation's latest record
	for _, ev := range events {
		switch ev.Kind {
		case trace.CallEffect, trace.CallRecorded:
			if c := ev.Call; c != nil && c.TakesBack() != "" && c.Status != journal.CallLate {
				sent[c.TakesBack()] = dispatch{status: c.Status, seq: ev.Seq}
			}
			e, ok, err := journal.EffectOf(ev)
			if err != nil {
				return nil, damaged(err)
			}
			if !ok {
				continue
			}
			if i, ok := at[e.Key]; ok {
				// the same call recorded again (a resumed idempotent call): the
				// latest record stands.
				v.Calls[i] = EffectCall{Seq: ev.Seq, Effect: *e, State: v.Calls[i].State}
				continue
			}
			at[e.Key] = len(v.Calls)
			v.Calls = append(v.Calls, EffectCall{Seq: ev.Seq, Effect: *e})
		case trace.Remediated:
			m, err := journal.DecodeRemediation(ev)
			if err != nil {
				return nil, damaged(err)
			}
			v.Remediations = append(v.Remediations, *m)
			remedied[m.Key] = ev.Seq
			if i, ok := at[m.Key]; ok {
				v.Calls[i].State = m.Status
			}
		}
	}
	for k, d := range sent {
		if i, ok := at[k]; ok && d.seq > remedied[k] {
			v.Calls[i].State = d.state(v.Calls[i].State)
		}
	}
	v.Data = dataEdges(f, v.Calls)
	return v, nil
}

// damaged is the error of a journal record that does not decode: the
// store holds something rein did not write, store.ErrDamaged (class
// damaged, exit 6), its text naming the run and seq.
func damaged(err error) error { return fmt.Errorf("%w: %w", store.ErrDamaged, err) }

// StateDispatched is the State of a call whose undo or compensation was
// dispatched (its call record committed as started) and whose outcome is
// not recorded: the process stopped in between.
const StateDispatched = "dispatched"

// dispatch is the latest record of a call's undo or compensation.
type dispatch struct {
	status journal.CallStatus
	seq    int64
}

// state is the call's state when that record is later than its latest
// remediation record (whose state is prior): the process stopped between
// the two.
func (d dispatch) state(prior string) string {
	switch d.status {
	case journal.CallStarted:
		return StateDispatched
	case journal.CallSucceeded:
		return journal.RemedyDone
	case journal.CallFailed:
		return journal.RemedyFailed
	}
	return prior
}

// dataDeps returns, per step index, the indexes of the steps whose output
// it depends on: those it reads and those it names in an explicit
// requires (the implicit order of a plain list is not a dependency).
func dataDeps(f *flow.Flow) [][]int {
	out := make([][]int, len(f.Steps))
	for i, s := range f.Steps {
		seen := map[int]bool{}
		add := func(j int) {
			if !seen[j] {
				seen[j] = true
				out[i] = append(out[i], j)
			}
		}
		if !s.ImplicitOrder {
			for _, j := range s.RequireIdx {
				add(j)
			}
		}
		for _, j := range s.SkipFrom {
			add(j)
		}
	}
	return out
}

// dataEdges links each call to the calls of the nearest upstream steps
// with effects its step depends on.
func dataEdges(f *flow.Flow, calls []EffectCall) []DataEdge {
	byStep := map[string][]string{}
	for _, c := range calls {
		if c.Remedy == "" {
			byStep[c.StepID] = append(byStep[c.StepID], c.Key)
		}
	}
	deps := dataDeps(f)
	out := []DataEdge{}
	for _, c := range calls {
		s := f.StepByID(c.StepID)
		if s == nil || c.Remedy != "" {
			continue
		}
		seen := map[int]bool{}
		var walk func(i int)
		walk = func(i int) {
			for _, j := range deps[i] {
				if seen[j] {
					continue
				}
				seen[j] = true
				if keys := byStep[f.Steps[j].ID]; len(keys) > 0 {
					for _, k := range keys {
						out = append(out, DataEdge{From: k, To: c.Key})
					}
					continue
				}
				walk(j)
			}
		}
		walk(s.Index)
	}
	return out
}
