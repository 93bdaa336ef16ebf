package temporal

import (
	"context"
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
)

// runRepeat carries out repeat step i's rounds as sched.Rounds decides,
// as the local runner does (engine's runRepeat): one round at a time,
// each round's attempts as activities (unitOf, retried by class, keys
// run/step#round/attempt), until repeat.until holds on the round's output
// or repeat.max rounds ran; a round that fails for good fails the rounds,
// and on_error takes over (recover). The output is the last round's.
//
// A round in doubt (its worker lost while a call that may not run twice
// ran) parks the step as unknown; the rounds settled before it are kept
// (wrun.rounds), so that the step, let run again, goes on from that round
// as a local run resumed does.
func (r *wrun) runRepeat(ctx workflow.Context, i, first int, v view) outcome {
	s := r.f.Steps[i]
	if version(ctx, changeRepeat) == workflow.DefaultVersion {
		// a run recorded before repeat steps ran on Temporal.
		return outcome{i: i, attempts: first, err: &failure{Class: string(fault.Business),
			Message: fmt.Sprintf("step %s: repeat steps do not run on Temporal yet; run the flow without --temporal", s.ID)}}
	}
	scope := engine.Scope(r.f, &engine.Settled{Input: r.input, Outputs: decodeAll(v.outputs), Statuses: statusesOf(v.statuses)})
	done := r.rounds[i]
	delete(r.rounds, i)
	var (
		m       sched.Rounds
		last    json.RawMessage
		lastV   any
		stop    *failure
		stopped int // the round the rounds stopped at, from 1
		// stoppedPrev is what that round read as previous.
		stoppedPrev json.RawMessage
		// lastRound is the last round that settled, from 1, and lastPrev
		// what it read as previous.
		lastRound int
		lastPrev  json.RawMessage
		attempts  = first
	)
	m.Reset(s)
	for {
		// a failed premise elsewhere holds the rounds not started (hold.go).
		gate, cf := r.holdGate(ctx, m.CanStart(0))
		if cf != nil {
			return outcome{i: i, attempts: attempts, err: cf}
		}
		if gate == sched.UnitsStop && m.CanStart(0) {
			return r.heldStop(i, attempts)
		}
		u, ok := m.Next(0)
		if !ok {
			break
		}
		k := u.Index
		engine.RoundScope(scope, k, lastV)
		roundPrev := last // what round k reads as previous
		var (
			out json.RawMessage
			f   *failure
		)
		if k < len(done) {
			out = done[k]
		} else {
			var n int
			var doubt bool
			out, f, n, doubt = r.unitOf(ctx, call{i: i, op: opAttempt, item: -1, round: k + 1, previous: last}, first, v)
			attempts = max(attempts, n)
			if doubt {
				if r.rounds == nil {
					r.rounds = map[int][]json.RawMessage{}
				}
				r.rounds[i] = done
				return outcome{i: i, attempts: attempts, park: store.KindUnknown, err: f}
			}
			if f == nil {
				done = append(done, out)
			}
		}
		if f == nil {
			last, lastV = out, decode(out)
			lastRound, lastPrev = k+1, roundPrev
			engine.SettleRound(scope, s, lastV)
		}
		over, err := m.Settle(context.Background(), k, f != nil, scope)
		if err != nil {
			uerr := engine.UntilFailure(context.Background(), s, err)
			f = &failure{Class: string(fault.ClassOf(uerr)), Message: uerr.Error()}
		}
		if f != nil {
			stop, stopped, stoppedPrev = f, k+1, roundPrev
		}
		if over {
			break
		}
	}
	if stop != nil {
		r.stoppedAt(i, stopped, stoppedPrev)
		return r.recover(ctx, i, attempts, stop, v)
	}
	if int64(len(last)) > s.MaxOutputBytes {
		if _, ff := r.exec(ctx, call{i: i, op: opCheck, item: -1, output: last}, v); ff != nil {
			// the fallback sees the last round as a local run's does:
			// previous and iteration.
			r.stoppedAt(i, lastRound, lastPrev)
			return r.recover(ctx, i, attempts, &ff.failure, v)
		}
	}
	return outcome{i: i, status: journal.StepSucceeded, out: last, attempts: attempts}
}

// stoppedAt records, for a fallback of repeat step i, the round (from 1)
// its rounds stopped at (the one that failed, or the last one, whose
// output broke max_output_bytes) and what that round read as previous
// (fallbackCall).
func (r *wrun) stoppedAt(i, round int, last json.RawMessage) {
	if r.roundAt == nil {
		r.roundAt = map[int]call{}
	}
	r.roundAt[i] = call{round: round, previous: last}
}

// fallbackCall is the call of step i's fallback: for a repeat step, with
// the round its rounds stopped at (stoppedAt), so that the fallback's
// scope holds previous and iteration as a local run's does.
func (r *wrun) fallbackCall(i int) call {
	c := call{i: i, op: opAttempt, item: -1, attempt: 1, fallback: true}
	if at, ok := r.roundAt[i]; ok {
		c.round, c.previous = at.round, at.previous
		delete(r.roundAt, i)
	}
	return c
}

// decodeAll decodes the outputs of a view.
func decodeAll(raw map[string]json.RawMessage) map[string]any {
	out := make(map[string]any, len(raw))
	for id, b := range raw {
		out[id] = decode(b)
	}
	return out
}

// statusesOf is a view's statuses in the journal's terms.
func statusesOf(in map[string]string) map[string]journal.StepStatus {
	out := make(map[string]journal.StepStatus, len(in))
	for id, st := range in {
		out[id] = journal.StepStatus(st)
	}
	return out
}
