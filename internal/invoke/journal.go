package invoke

import (
	"encoding/json"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value"
)

// Journal returns the call record (journal.Call) of r with status: where
// it was made and its key, the tool, the args' digest and provenance, the
// gate's decision, the outcome, the error (unless the call is only
// started) and the timing, with the output when keep is set and the call
// succeeded, and the effect spec declares when it has one. It is the
// record of every caller: the engine replaces the effect with what only it
// knows (rendered resources, compensations); the MCP server's ledger and a
// workflow task's source adapter keep the spec's.
func (r *Record) Journal(status journal.CallStatus, spec *tool.Spec, keep bool) *journal.Call {
	at := &r.At
	c := &journal.Call{StepID: at.StepID, Key: r.Key, Item: -1, Round: at.Round, Plan: at.Plan, PlanStep: at.PlanStep,
		Turn: at.Turn, Index: at.Call, Fallback: at.Fallback, Attempt: at.Attempt, Remedy: at.Remedy,
		Kind: journal.CallTool, Name: r.Tool, ArgsSHA: r.ArgsDigest(), Status: status, Outcome: string(r.Outcome),
		Provenance: safety.ProvenanceRecord(r.Provenance), StartedAt: r.Start, Duration: r.Duration}
	if at.ForEach {
		c.Item = at.Item
	}
	c.Invalidated = r.Invalidated
	if keep && status == journal.CallSucceeded {
		c.Output, _ = value.AppendCanonical(nil, r.Output)
	}
	if r.Err != nil && status != journal.CallStarted {
		c.ErrorClass, c.Error = string(fault.ClassOf(r.Err)), r.Err.Error()
	}
	if g := r.Gate; g != nil {
		d := journal.CallGate{Verdict: string(g.Decision.Verdict), Why: g.Decision.Why()}
		if g.Basis != nil {
			d.Basis, _ = json.Marshal(g.Basis)
		}
		for _, w := range g.Decision.LogOnly {
			d.LogOnly = append(d.LogOnly, journal.LoggedRule{Verdict: string(w.Verdict), Why: w.Why()})
		}
		c.Gate = []journal.CallGate{d}
	}
	if spec != nil && safety.HasEffect(spec) {
		c.Effect = &journal.DeclaredEffect{Effect: string(spec.Effect), Reversibility: string(spec.Reversibility),
			Idempotent: spec.Idempotent, Tags: spec.Tags}
	}
	return c
}
