package invoke

import "strconv"

// Position says where in a run a call is made; the idempotency key is
// derived from it alone.
type Position struct {
	RunID  string
	StepID string
	// ForEach marks a call for one item of a for_each step, and Item is
	// that item's index (from 0).
	ForEach bool
	Item    int
	// Round is the repeat round (from 1), or 0 outside a repeat loop.
	Round int
	// Fallback marks the call of a step's fallback tool.
	Fallback bool
	// Attempt is the step's attempt, from 1.
	Attempt int

	// Parent, when set, is the key of the step attempt a sub-call (a plan
	// step, an agent call) is part of; the key extends it, and the fields
	// above only describe the call. Empty: the key starts from the fields
	// above.
	Parent string
	// Plan and PlanStep place a plan step: the plan's number in the step
	// (1, then 1 more per replan) and the plan step's id.
	Plan     int
	PlanStep string
	// Turn and Call place an agent's tool call: its turn (from 1) and its
	// index among the turn's calls (from 1). Zero: not an agent call.
	Turn int
	Call int
	// Remedy, "undo" or "compensate", marks the call that takes back the
	// call whose key is Parent.
	Remedy string
}

// Key returns p's idempotency key (see the package documentation).
func (p *Position) Key() string {
	var b [128]byte
	return string(p.AppendKey(b[:0]))
}

// AppendKey appends p's idempotency key to dst. Parts a standalone caller
// left empty (no run, no step, no attempt) are left out with their
// separator.
func (p *Position) AppendKey(dst []byte) []byte {
	start := len(dst)
	sep := func(dst []byte) []byte {
		if len(dst) > start {
			dst = append(dst, '/')
		}
		return dst
	}
	if p.Parent != "" {
		dst = append(dst, p.Parent...)
	} else {
		if p.RunID != "" {
			dst = append(dst, p.RunID...)
		}
		if p.StepID != "" {
			dst = append(sep(dst), p.StepID...)
		}
		if p.ForEach {
			dst = strconv.AppendInt(append(dst, '['), int64(p.Item), 10)
			dst = append(dst, ']')
		}
		if p.Round > 0 {
			dst = strconv.AppendInt(append(dst, '#'), int64(p.Round), 10)
		}
		if p.Fallback {
			dst = append(sep(dst), "fallback"...)
		}
		if p.Attempt > 0 {
			dst = strconv.AppendInt(sep(dst), int64(p.Attempt), 10)
		}
	}
	if p.PlanStep != "" {
		dst = strconv.AppendInt(append(sep(dst), "plan"...), int64(p.Plan), 10)
		dst = append(append(dst, '/'), p.PlanStep...)
	}
	if p.Turn > 0 {
		dst = strconv.AppendInt(append(sep(dst), "turn"...), int64(p.Turn), 10)
		dst = strconv.AppendInt(append(dst, "/call"...), int64(p.Call), 10)
	}
	if p.Remedy != "" {
		dst = append(sep(dst), p.Remedy...)
	}
	return dst
}
