package temporal

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
)

// sagaRetryFlow: a charge the saga compensates, a read of it, and a
// shipment that fails once.
const sagaRetryFlow = `name: saga
on_failure: compensate
steps:
  - {id: take, tool: charge, args: {amount: 5}}
  - {id: look, tool: peek, args: {}, requires: [take]}
  - {id: ship, tool: ship, args: {}, requires: [look]}
`

// TestRetryRemakesWhatTheSagaTookBack: a failed run whose saga refunded
// its charge carries the key it took back; its retry makes the charge
// again at attempt 2 (a new key), with the read downstream of it, then
// the failed step, as a local retry does (engine.TakenBack); nothing is
// refunded twice.
func TestRetryRemakesWhatTheSagaTookBack(t *testing.T) {
	l := newLedger()
	l.fails["ship"] = failPlan{n: 1, class: fault.Business}
	p := load(t, sagaRetryFlow, sagaTools(l, true)...)
	in, err := StartInput(p, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	st, cl := newHarness(t, p).execute(in)
	if st != nil || cl == nil || cl.Next.Carry == nil {
		t.Fatalf("first run: %+v, closed %+v: want it failed and closed", st, cl)
	}
	if got := strings.Join(cl.Next.Carry.TakenBack, " "); got != "run-1/take/1" || l.count("refund") != 1 {
		t.Fatalf("taken back %q, refunds %d: want the charge refunded once", got, l.count("refund"))
	}
	next := cl.Next
	next.Retry = &Decision{By: "ana"}
	st, failed := newHarness(t, p).execute(next)
	if failed != nil || st == nil || st.Status != "succeeded" {
		t.Fatalf("retried run: %+v, closed %+v", st, failed)
	}
	if got := strings.Join(l.keys("charge"), " "); got != "run-1/take/1 run-1/take/2" {
		t.Errorf("charge keys %q: the refunded charge is made again at attempt 2", got)
	}
	if got := strings.Join(l.keys("peek"), " "); got != "run-1/look/1 run-1/look/2" {
		t.Errorf("peek keys %q: the read downstream of it runs again", got)
	}
	if l.count("refund") != 1 {
		t.Errorf("refunds %d, want 1", l.count("refund"))
	}
	if s := stepOf(t, st, "take"); s.Attempts != 2 {
		t.Errorf("take %+v: want attempt 2", s)
	}
}
