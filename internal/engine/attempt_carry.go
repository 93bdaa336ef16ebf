package engine

// What an attempt outside the runner (runAt) takes over from the run's
// earlier attempts, beyond its scope and budget: the run's risk tier, the
// origins its calls tainted, and the evidence of its settled tool steps —
// what a run of the runner holds in memory from one step to the next, and
// a resumed one restores from its journal (resume.go).

// carryIn starts r from what the driver handed over in s: its tier (the
// floor startRisk starts from), its taint (r.inv, when the engine checks
// invalidated resources) and, for a gated run, the outputs of its settled
// tool steps as evidence (restoreEvidence, as a resumed run's). It keeps
// s.OnTainted to report the taint at the end (reportTainted).
func (r *run) carryIn(s *Settled) {
	r.restoredTier = s.Tier
	r.inv.Restore(s.Tainted)
	r.outside.onTainted = s.OnTainted
	if r.ev == nil {
		return
	}
	for i, st := range r.f.Steps {
		if out, ok := s.Outputs[st.ID]; ok {
			r.restoreEvidence(i, s.Statuses[st.ID], out)
		}
	}
}

// reportTainted hands an attempt outside the runner's OnTainted the run's
// taint as the attempt left it, when there is any (at its end).
func (r *run) reportTainted() {
	o := r.outside
	if o == nil || o.onTainted == nil {
		return
	}
	if ts := r.inv.Taints(); len(ts) > 0 {
		o.onTainted(ts)
	}
	o.onTainted = nil
}
