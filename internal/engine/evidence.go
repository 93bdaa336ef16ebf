package engine

import (
	"strconv"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// A gated run keeps its evidence (safety.Evidence): the run's input as the
// user's (its fields structured; a chat's messages free text, whose values
// are user-mentioned), and the output of every tool call that succeeded —
// flow steps, for_each items, plan steps, agent calls. The gate is told
// which model-written arguments a field a tool verifies (verifies:) holds
// (Invocation.Verified), agent loops and plans trace the model's values to
// it, and declarations are checked against it. A resumed run starts it
// again from its input and the outputs of its settled tool steps; calls
// made before the resume inside plans and agents are not in it, which only
// makes the gate stricter.

// startEvidence gives a gated run its evidence, holding the input (of a
// chat's history, the user's messages as the user's and the tool
// observations as their tools').
func (r *run) startEvidence() {
	if !r.b.gated() {
		return
	}
	r.ev = &safety.Evidence{}
	r.ev.Grow(len(r.f.Steps) + 1)
	in, ok := r.input.(map[string]any)
	if _, chat := in["history"]; !ok || !chat {
		r.ev.AddUser("input", r.input)
		return
	}
	// a chat's history holds the assistant's words too: only the user's
	// messages are the user's.
	rest := make(map[string]any, len(in))
	for k, v := range in {
		if k != "history" {
			rest[k] = v
		}
	}
	r.ev.AddUser("input", rest)
	msgs, tools := historyOf(r.input)
	for i, m := range msgs {
		switch m.Role {
		case model.User:
			r.ev.AddUserText("history/"+strconv.Itoa(i), m.Content)
		case model.Tool:
			// an earlier run's observation: what that tool said, as the
			// model was shown it.
			spec := tool.Spec{Name: tools[i], Effect: tool.EffectExternal} // unknown: confirms nothing
			if t, ok := r.e.cfg.Tools.Lookup(tools[i]); ok && tools[i] != "" {
				spec = t.Spec()
			}
			r.ev.AddObservation("history/"+strconv.Itoa(i), &spec, m.Content)
		}
	}
}

// restoreEvidence adds the output of settled tool step i of a resumed run.
func (r *run) restoreEvidence(i int, status trace.StepStatus, out any) {
	s := r.f.Steps[i]
	if r.ev == nil || s.Type != flow.Tool || status != trace.StepSucceeded || out == nil {
		return
	}
	r.ev.AddTool(r.b.evRef[i], &r.b.specs[i], out)
}

// noteOutput adds the output of a call that succeeded to the evidence.
func (r *run) noteOutput(rec *invoke.Record) {
	if r.ev == nil || rec.Outcome != invoke.OK || rec.Output == nil {
		return
	}
	at := &rec.At
	if at.PlanStep == "" && at.Turn == 0 && !at.ForEach && !at.Fallback {
		// a tool step's own call: the common case, with nothing to build
		if s := r.f.StepByID(at.StepID); s != nil && s.Type == flow.Tool {
			r.ev.AddTool(r.b.evRef[s.Index], &r.b.specs[s.Index], rec.Output)
			return
		}
	}
	spec, ok := r.callSpec(rec)
	if !ok {
		spec = tool.Spec{Name: rec.Tool, Effect: tool.EffectExternal} // unknown: confirms nothing
	}
	r.ev.AddTool(evidenceRef(at), &spec, rec.Output)
}

// evidenceRef names where a call was made: "step s", "step s item 2",
// "step s plan step p", "step s turn1/call2".
func evidenceRef(at *invoke.Position) string {
	ref := "step " + at.StepID
	switch {
	case at.PlanStep != "":
		ref += " plan step " + at.PlanStep
	case at.Turn > 0:
		ref += " turn" + strconv.Itoa(at.Turn) + "/call" + strconv.Itoa(at.Call)
	case at.ForEach:
		ref += " item " + strconv.Itoa(at.Item)
	}
	return ref
}

// planEvidence is the evidence a plan of this run starts from: a copy of
// the run's (the plan adds its steps' outputs to its own; the run's gets
// them through the call records), or nil when the run is not gated.
func (r *run) planEvidence() *safety.Evidence {
	if r.ev == nil {
		return nil
	}
	ev := &safety.Evidence{}
	ev.Include(r.ev)
	return ev
}
