package flow

// checkSubmission checks a submit or source step: its output comes from
// an agent (or an adapter the agent triggers), so it has nothing to render
// or call, and a source step names its adapter.
func (d *decoder) checkSubmission(s *Step, src *stepSrc, pos Pos, label string) {
	for _, k := range []string{"tool", "prompt_template", "model", "args", "for_each", "repeat", "approval", "retries", "backoff", "fallback"} {
		if f, ok := src.fields[k]; ok {
			d.diags.add(f.keyPos, label, "a %s step waits for an agent's output; %s does not belong to it", s.Type, k)
		}
	}
	if s.Type == Source && s.Adapter == "" {
		d.diags.add(pos, label, "a source step needs adapter: NAME (a Go adapter registered with workflowtool.RegisterAdapter, or one of rein.yaml adapters:)")
	}
}

// checkDeliverables checks that deliverables: names steps of the flow.
func (d *decoder) checkDeliverables() {
	for i, id := range d.flow.Deliverables {
		if d.flow.StepByID(id) == nil {
			d.diags.add(d.deliverablePos[i], "", "deliverables: no step %q%s", id, didYouMean(id, d.stepIDs()))
		}
	}
}

// FinalSteps returns the ids of the steps no other step requires, in file
// order: what a delivery renders when the flow names no deliverables.
func (f *Flow) FinalSteps() []string {
	var out []string
	for _, s := range f.Steps {
		if len(s.Downstream) == 0 {
			out = append(out, s.ID)
		}
	}
	return out
}
