package temporal

import (
	"encoding/json"
	"testing"
	"time"
)

const premiseFlow = `name: premised
concurrency: 1
steps:
  - id: lookup
    tool: lookup
    args: {region: ""}
    premise: {id: region-known, claim: "the registry knows the region", check: 'output.args.region != ""'}
  - {id: save, tool: save, args: {region: "{lookup.args.region}"}}
  - {id: audit, tool: audit, args: {}, requires: []}
`

// TestPremisePausesTheRun: on Temporal too, a step whose output
// contradicts its premise waits (kind premise) and pauses the whole run:
// the independent audit is not called until a person settles the step;
// then every paused branch runs.
func TestPremisePausesTheRun(t *testing.T) {
	l := newLedger()
	p := load(t, premiseFlow, l.tool("lookup", true), l.tool("save", false), l.tool("audit", false))
	h := newHarness(t, p)
	var settle *updated
	h.env.RegisterDelayedCallback(func() {
		var pend []Pending
		h.query(QueryPending, &pend)
		if len(pend) != 1 || pend[0].Step != "lookup" || pend[0].Kind != "premise" {
			t.Errorf("pending %+v, want lookup waiting on its premise", pend)
		}
		if n := l.count("audit"); n != 0 {
			t.Errorf("audit called %d times while the run is paused, want 0", n)
		}
		var next []NextAction
		h.query(QueryNextActions, &next)
		if len(next) != 3 {
			t.Errorf("next_actions %+v", next)
		}
		settle = h.update(Decision{Step: "lookup", Action: ActionSettle, Output: json.RawMessage(`{"args": {"region": "eu"}}`), By: "ana"})
	}, time.Minute)
	st := h.run(map[string]any{})
	if settle == nil || !settle.done || settle.err != nil {
		t.Fatalf("settle: %+v", settle)
	}
	if st.Status != "succeeded" || l.count("audit") != 1 || l.count("save") != 1 || l.count("lookup") != 1 {
		t.Fatalf("run %s; calls lookup %d, save %d, audit %d", st.Status, l.count("lookup"), l.count("save"), l.count("audit"))
	}
}
