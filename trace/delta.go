package trace

import "context"

// Delta is a piece of a model's reply while the model writes it: the
// text a provider streamed since the previous Delta of the same call, with
// the call it belongs to. Deltas are never journaled (the journal keeps
// the final reply, in the model_call, agent_turn and step events); they
// are for a person watching (rein agent, rein chat) or a client following
// a run (a server forwarding them as Server-Sent Events).
//
// Text has been through the run's redactor, with the end of a call's text
// held back until it cannot be the start of a secret, so a secret split
// across two pieces is hidden too.
type Delta struct {
	RunID   string `json:"run_id"`
	StepID  string `json:"step_id"`
	Attempt int    `json:"attempt"`
	// Turn is the agent loop's turn (from 1); 0 for an llm step's call.
	Turn int `json:"turn,omitempty"`
	// SubRun and Aside are the request's (model.Request): the sub-run of
	// an agent the turn is of ("" for the step's own loop), and whether
	// its text is not the conversation's (an agent called as a tool).
	SubRun string `json:"sub_run,omitempty"`
	Aside  bool   `json:"aside,omitempty"`
	// Model is the model name the step asked for.
	Model string `json:"model"`
	// Decision is the request's: "" for an llm step, "agent", "route", …
	Decision string `json:"decision,omitempty"`
	// Text is the new text.
	Text string `json:"text,omitempty"`
	// Reset says the call failed after some of its text was delivered: a
	// watcher forgets the text of this call so far (the call may be asked
	// again, and its next try streams from the start). Text is empty.
	Reset bool `json:"reset,omitempty"`
}

// DeltaSink is a Sink that also receives Deltas. The engine streams a
// model call (model.WithDeltas) only when its sink is, or holds, a
// DeltaSink (DeltasOf): without one, providers are called without
// streaming. EmitDelta is called on the goroutine making the model call,
// possibly concurrently for different calls, and must return quickly (hand
// the delta to a channel, write it to a terminal); the Delta is a value,
// the sink's to keep.
type DeltaSink interface {
	Sink
	EmitDelta(ctx context.Context, d Delta)
}

// DeltasOf returns the DeltaSink s is or holds: s itself, the members of a
// Multi that are DeltaSinks (each gets every Delta, in order), or the sink
// an Async wraps (called directly, never queued: a delta is not an event,
// and the wrapped sink must take it quickly). Nil when there is none.
func DeltasOf(s Sink) DeltaSink {
	switch v := s.(type) {
	case nil:
		return nil
	case DeltaSink:
		return v
	case *Async:
		return DeltasOf(v.next)
	case borrowingMulti:
		return DeltasOf(v.multi)
	case multi:
		var out deltaMulti
		for _, m := range v {
			if d := DeltasOf(m); d != nil {
				out = append(out, d)
			}
		}
		switch len(out) {
		case 0:
			return nil
		case 1:
			return out[0]
		}
		return out
	}
	return nil
}

type deltaMulti []DeltaSink

func (m deltaMulti) Emit(ctx context.Context, e *Event) {
	for _, s := range m {
		s.Emit(ctx, e)
	}
}

func (m deltaMulti) EmitDelta(ctx context.Context, d Delta) {
	for _, s := range m {
		s.EmitDelta(ctx, d)
	}
}
