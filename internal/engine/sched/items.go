package sched

import (
	"context"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine/sched/fan"
)

// Items decides a for_each step's items: a fan.Fan over them, in index
// order, at most for_each.concurrency at once, with the step's on_error
// applied per item (Settle). The zero Items is ready for Reset.
type Items struct {
	fan.Fan
	s *flow.Step
}

// ItemVerdict is what a settled for_each item means (Items.Settle).
type ItemVerdict uint8

// The item verdicts.
const (
	// ItemDone: the item's output (or its fallback's) fills its slot.
	ItemDone ItemVerdict = iota
	// ItemDefaulted: on_error absorbed its failure; fallback_value fills
	// its slot.
	ItemDefaulted
	// ItemFallingBack: its fallback is handed out next (Op fan.Recover).
	ItemFallingBack
	// ItemFailed: the step fails; nothing more is handed out, and the
	// items in flight are the runner's to cancel.
	ItemFailed
)

// Reset makes it the machine of step s's n items.
func (it *Items) Reset(s *flow.Step, n int) {
	it.s = s
	it.Fan.Reset(n, s.ForEach.Concurrency)
}

// Settle decides what unit u's settlement means: failed says it failed
// with an error of class, stopped that the run's context ended or an item
// already failed the step. A failed item fails the step unless the step's
// on_error is skip (ItemDefaulted) or fallback (ItemFallingBack, and its
// fallback's failure fails the step), and never once the run stops
// (StopsRun).
func (it *Items) Settle(u fan.Unit, failed bool, class fault.Class, stopped bool) ItemVerdict {
	stopped = stopped || it.Stopped()
	v := ItemDone
	switch {
	case !failed:
	case u.Op == fan.Recover:
		v = ItemFailed
	case it.s.OnError != flow.Skip && it.s.OnError != flow.Fallback:
		v = ItemFailed
	default:
		switch RecoverItem(it.s, class, stopped) {
		case DefaultStep:
			v = ItemDefaulted
		case FallBack:
			it.Again(u.Index)
			return ItemFallingBack
		default:
			v = ItemFailed
		}
	}
	if v == ItemFailed {
		it.Stop()
	}
	it.Fan.Settle(u.Index)
	return v
}

// Rounds decides a repeat step's rounds: one at a time, at most
// repeat.max, until repeat.until holds or a round fails. The zero Rounds
// is ready for Reset.
type Rounds struct {
	fan.Fan
	s *flow.Step
}

// Reset makes r the machine of step s's rounds.
func (r *Rounds) Reset(s *flow.Step) {
	r.s = s
	r.Fan.Reset(s.Repeat.Max, 1)
}

// Settle decides what round k's settlement means and reports whether the
// rounds are over: a failed round stops them (the step fails); a round
// that succeeded ends them when repeat.until holds on env (the step's
// scope with the round's output), evaluated under ctx. An until that
// cannot be evaluated stops them with its error.
func (r *Rounds) Settle(ctx context.Context, k int, failed bool, env map[string]any) (bool, error) {
	r.Fan.Settle(k)
	if failed {
		r.Stop()
		return true, nil
	}
	done, err := r.s.Repeat.Until.EvalContext(ctx, env)
	if err != nil {
		r.Stop()
		return true, err
	}
	if done {
		r.Close()
	}
	return done || r.Done(), nil
}
