package invoke

import (
	"slices"

	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
)

// A driver that hands a run's calls out one attempt at a time (a workflow
// engine's activities, each with an Invalid of its own) carries the run's
// taint from one attempt to the next: Taints is what an attempt's Invalid
// tainted, Restore starts the next one from the run's set, and MergeTaints
// folds an attempt's set into the run's. A write made in a later step from
// a flagged read then meets the rule invalidated-resource, as in a run of
// the runner, whose one Invalid lives as long as the run.

// Taint is one origin a run tainted (safety.ToolOrigin of a tool whose
// call touched an invalidated resource), with the rows that tainted it.
type Taint struct {
	Origin safety.Origin        `json:"origin"`
	Via    []store.Invalidation `json:"via,omitempty"`
}

// MaxTaintVia bounds the rows a Taint keeps (they name the resources in
// the reason people read; the first ones are kept): a carried taint stays
// small however often a tainted tool is called.
const MaxTaintVia = 16

// Taints returns the origins iv tainted, in the order they were first
// tainted, each with its rows (copies). Nil for a nil Invalid or one that
// tainted nothing.
func (iv *Invalid) Taints() []Taint {
	if iv == nil || !iv.tainted.Load() {
		return nil
	}
	iv.mu.Lock()
	defer iv.mu.Unlock()
	out := make([]Taint, len(iv.origins))
	for i, o := range iv.origins {
		out[i] = Taint{Origin: o, Via: slices.Clone(iv.via[i])}
	}
	return out
}

// Restore taints the origins of ts, as if iv's run had made the calls
// that tainted them: a run's later attempt starts from what its earlier
// ones tainted. A nil Invalid restores nothing.
func (iv *Invalid) Restore(ts []Taint) {
	if iv == nil {
		return
	}
	for _, t := range ts {
		if t.Origin != "" {
			iv.taint(t.Origin, t.Via)
		}
	}
}

// MergeTaints returns run with the origins and rows of more added: an
// origin not in run goes at the end, in more's order; a row already there
// (same resource, run and call) is not added again, and an origin keeps
// MaxTaintVia rows at most. run is not modified. Deterministic: a workflow
// may call it.
func MergeTaints(run, more []Taint) []Taint {
	if len(more) == 0 {
		return run
	}
	out := make([]Taint, len(run), len(run)+len(more))
	for i, t := range run {
		out[i] = Taint{Origin: t.Origin, Via: slices.Clone(t.Via)}
	}
	for _, t := range more {
		if t.Origin == "" {
			continue
		}
		i := slices.IndexFunc(out, func(o Taint) bool { return o.Origin == t.Origin })
		if i < 0 {
			out = append(out, Taint{Origin: t.Origin})
			i = len(out) - 1
		}
		for _, v := range t.Via {
			if len(out[i].Via) >= MaxTaintVia {
				break
			}
			if !slices.ContainsFunc(out[i].Via, func(w store.Invalidation) bool {
				return w.Resource == v.Resource && w.RunID == v.RunID && w.CallKey == v.CallKey
			}) {
				out[i].Via = append(out[i].Via, v)
			}
		}
	}
	return out
}
