package invoke

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// Invalid is one run's view of the store's registry of invalidated
// resources (store.Invalidation): the resources remediations of earlier
// runs froze. The caller that runs a run puts it in the run's context
// (WithInvalid), and the pipeline checks every call of a tool that
// declares resources: before the call the resources its args render,
// after it those only its output renders. A call that touches one is
// flagged (Record.Invalidated, journaled with the call) and gets origin
// invalidated at "" in its provenance; the pipeline then asks the gate
// joined with the rule invalidated-resource, so a write, external or
// destructive call waits for a person whatever the run's policy. A call
// that touched one taints its tool's origin (safety.ToolOrigin) for the
// rest of the run: a later argument of that origin is invalidated too, so
// a write made from a flagged read meets the rule. The taint is by
// origin, not by value: it over-approximates (every output of that tool,
// or of any read tool for db), which only ever asks a person more.
//
// The hot path stays cheap: a call of a tool without resources, in a run
// that tainted nothing, costs a context lookup; the first lookup of a run
// asks whether the tenant has any invalidated resource at all and
// remembers a "none" for the rest of the run; after that, one indexed
// lookup per call of a tool with resources. It is safe for concurrent use.
type Invalid struct {
	Store  store.Store
	Tenant string

	some    atomic.Int32 // 0 not asked, 1 none, 2 some
	tainted atomic.Bool
	mu      sync.Mutex
	origins []safety.Origin        // tainted, under mu
	via     [][]store.Invalidation // what tainted origins[i], under mu
}

type invalidKey struct{}

// WithInvalid returns ctx carrying iv, which every call made with it
// checks.
func WithInvalid(ctx context.Context, iv *Invalid) context.Context {
	return context.WithValue(ctx, invalidKey{}, iv)
}

// InvalidOf returns the Invalid of ctx, or nil.
func InvalidOf(ctx context.Context) *Invalid {
	iv, _ := ctx.Value(invalidKey{}).(*Invalid)
	return iv
}

// any reports whether the tenant may have invalidated resources: false
// once a lookup found none (remembered for the run).
func (iv *Invalid) any(ctx context.Context) (bool, error) {
	switch iv.some.Load() {
	case 1:
		return false, nil
	case 2:
		return true, nil
	}
	rows, err := iv.Store.Invalidated(ctx, &store.InvalidatedParams{Tenant: iv.Tenant, Limit: 1})
	if err != nil {
		return false, err
	}
	if len(rows) == 0 {
		iv.some.Store(1)
		return false, nil
	}
	iv.some.Store(2)
	return true, nil
}

// lookup returns the rows of the resources spec renders from args and out
// (out nil: before the call; then those that need the output are left
// out), skipping the resources of skip (rendered before the call).
func (iv *Invalid) lookup(ctx context.Context, spec *tool.Spec, args, out any, skip []string) (rendered []string, hits []store.Invalidation, err error) {
	if len(spec.Resources) == 0 {
		return nil, nil, nil
	}
	if ok, err := iv.any(ctx); err != nil || !ok {
		return nil, nil, err
	}
	var e journal.Effect
	safety.Touches(&e, spec, args, out)
	for _, r := range slices.Concat(e.Reads, e.Writes, e.Sends) {
		if !slices.Contains(skip, r) && !slices.Contains(rendered, r) {
			rendered = append(rendered, r)
		}
	}
	if len(rendered) == 0 {
		return nil, nil, nil
	}
	rows, err := iv.Store.Invalidated(ctx, &store.InvalidatedParams{Tenant: iv.Tenant, Resources: rendered})
	if err != nil {
		return rendered, nil, err
	}
	for _, r := range rows {
		hits = append(hits, *r)
	}
	return rendered, hits, nil
}

// taint marks o's values invalidated for the rest of the run, because of
// hits.
func (iv *Invalid) taint(o safety.Origin, hits []store.Invalidation) {
	iv.mu.Lock()
	if i := slices.Index(iv.origins, o); i >= 0 {
		iv.via[i] = append(iv.via[i], hits...)
	} else {
		iv.origins = append(iv.origins, o)
		iv.via = append(iv.via, slices.Clone(hits))
	}
	iv.mu.Unlock()
	iv.tainted.Store(true)
}

// taintedIn returns the rows behind the first origin of prov the run
// tainted, and whether there is one.
func (iv *Invalid) taintedIn(prov safety.Provenance) ([]store.Invalidation, bool) {
	if !iv.tainted.Load() {
		return nil, false
	}
	iv.mu.Lock()
	defer iv.mu.Unlock()
	_, o, ok := prov.Has(func(o safety.Origin) bool { return slices.Contains(iv.origins, o) })
	if !ok {
		return nil, false
	}
	return iv.via[slices.Index(iv.origins, o)], true
}

// Checked is what Check found about a call before it is made.
type Checked struct {
	// Flagged: the call touches an invalidated resource (Hits), or an
	// argument comes from a tainted origin (no Hits).
	Flagged bool
	Hits    []store.Invalidation
	// Provenance is the call's, with origin invalidated at "" when
	// Flagged (a copy; the one given is never modified).
	Provenance safety.Provenance
	// Rendered are the resources the args rendered.
	Rendered []string
	// Via are, for an argument of a tainted origin, the rows that tainted
	// it (another call of the run touched them).
	Via []store.Invalidation
}

// Check is the check before a call of spec with args and provenance
// prov. A lookup that fails is a transient error: the call is not made
// blind. The engine asks it before parking a tool step (its gate's look
// ahead); the pipeline asks it for every call. A nil Invalid finds
// nothing.
func (iv *Invalid) Check(ctx context.Context, spec *tool.Spec, args any, prov safety.Provenance) (Checked, error) {
	c := Checked{Provenance: prov}
	if iv == nil {
		return c, nil
	}
	rendered, hits, err := iv.lookup(ctx, spec, args, nil, nil)
	if err != nil {
		return c, fault.TransientErr(fmt.Errorf("tool %s: check its resources against the invalidated ones: %w", spec.Name, err))
	}
	c.Rendered, c.Hits = rendered, hits
	via, tainted := iv.taintedIn(prov)
	if len(hits) > 0 || tainted {
		c.Flagged, c.Provenance, c.Via = true, withInvalidated(prov), via
	}
	return c, nil
}

// withInvalidated is a copy of prov with origin invalidated at "".
func withInvalidated(prov safety.Provenance) safety.Provenance {
	out := make(safety.Provenance, len(prov)+1)
	for k, v := range prov {
		out[k] = v
	}
	out.Add("", safety.OriginInvalidated)
	return out
}

// InvalidGate is the rule invalidated-resource as a gate for the call c
// flagged, its reason naming the resources, the runs and premises that
// invalidated them, and how to clear them.
func InvalidGate(c *Checked) safety.Gate {
	return &safety.Policy{Rules: []safety.Rule{safety.InvalidatedRule(InvalidReason(c.Hits, c.Via))}}
}

// InvalidReason says, for people, why a call was flagged — hits, the
// invalidated resources it touches, or via, those another call of the run
// touched whose output an argument comes from — and how to clear them.
func InvalidReason(hits, via []store.Invalidation) string {
	var b strings.Builder
	rows := hits
	if len(hits) == 0 {
		if len(via) == 0 {
			return "an argument comes from the output of a call of this run that touched an invalidated resource; a person approves the exact call"
		}
		b.WriteString("an argument comes from the output of a call of this run that touched an invalidated resource: ")
		rows = via
	}
	for i, h := range rows {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "resource %s was invalidated by run %s (call %s, premise %s)", h.Resource, h.RunID, h.CallKey, h.Premise)
	}
	fmt.Fprintf(&b, "; a person approves the exact call, or clears the resource once it is put right (rein resources clear %s)", rows[0].Resource)
	return b.String()
}

// Touched records what a call found invalidated (hits, before or after
// the call) in rec, and taints its tool's origin for the rest of the run.
func (iv *Invalid) Touched(rec *Record, spec *tool.Spec, hits []store.Invalidation, after bool) {
	if iv == nil || len(hits) == 0 {
		return
	}
	iv.taint(safety.ToolOrigin(spec), hits)
	for _, h := range hits {
		rec.Invalidated = append(rec.Invalidated, journal.InvalidatedUse{Resource: h.Resource, RunID: h.RunID, CallKey: h.CallKey,
			Premise: h.Premise, After: after})
	}
}
