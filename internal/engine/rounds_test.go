package engine

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/reinhq/rein/store"
)

// round is the record of a repeat round's call: its key, and its output
// when it succeeded.
func round(n, attempt int, status store.CallStatus, out any) *store.Call {
	c := &store.Call{StepID: "r", Key: fmt.Sprintf("run/r#%d/%d", n, attempt), Item: -1, Round: n, Attempt: attempt, Kind: store.CallTool, Name: "pay", Status: status}
	if out != nil {
		c.Output, _ = json.Marshal(out)
	}
	return c
}

// TestFromRounds: a repeat step's records say where its loop was — the
// rounds that settled from round 1 on and the one in doubt after them —
// leaving out an execution before a retry re-opened the step (by its
// records' order, and by their attempt: from, the retried execution's
// first, when the journal says rein runs retry re-opened it), and
// records an earlier rein wrote (no output kept) say nothing: the step
// is then run again or parked whole, as before.
func TestFromRounds(t *testing.T) {
	ok := store.CallSucceeded
	cases := []struct {
		name    string
		calls   []*store.Call
		known   bool
		rounds  int
		doubt   string
		settled int
		from    int // fallbackAttempt: 1, or the retried execution's first attempt
	}{
		{"none", nil, false, 0, "", 0, 1},
		{"an earlier rein's records", []*store.Call{round(1, 1, ok, nil), round(2, 1, ok, nil)}, false, 0, "", 0, 1},
		{"two settled, the third in doubt", []*store.Call{round(1, 1, store.CallStarted, nil), round(1, 1, ok, 1), round(2, 1, store.CallStarted, nil), round(2, 1, ok, 2), round(3, 1, store.CallStarted, nil)},
			true, 2, "round 3 (tool pay, idempotency key run/r#3/1)", 2, 1},
		{"a round retried within its attempt", []*store.Call{round(1, 1, store.CallStarted, nil), round(1, 1, store.CallFailed, nil), round(1, 2, store.CallStarted, nil), round(1, 2, ok, 1)},
			true, 1, "", 1, 1},
		{"settled, nothing in doubt", []*store.Call{round(1, 1, ok, 1), round(2, 1, ok, 2)}, true, 2, "", 2, 1},
		{"the execution before a retry is left out", []*store.Call{round(1, 1, ok, 1), round(2, 1, store.CallFailed, nil), round(1, 2, store.CallStarted, nil)},
			true, 0, "round 1 (tool pay, idempotency key run/r#1/2)", 0, 2},
		{"re-opened by a retry, killed before a round of it was recorded", []*store.Call{round(1, 1, ok, 1), round(2, 1, ok, 2)}, false, 0, "", 0, 2},
		{"in doubt, approved, and in doubt again: only the latest attempt's call is asked about", []*store.Call{round(1, 1, ok, 1), round(2, 1, store.CallStarted, nil), round(2, 2, store.CallStarted, nil)},
			true, 1, "round 2 (tool pay, idempotency key run/r#2/2)", 1, 1},
		{"re-opened by a retry, its second round in doubt", []*store.Call{round(1, 1, ok, 1), round(2, 1, ok, 2), round(1, 2, ok, 1), round(2, 2, store.CallStarted, nil)},
			true, 1, "round 2 (tool pay, idempotency key run/r#2/2)", 1, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &stepProgress{}
			known, err := p.fromRounds(tc.calls, tc.from)
			if err != nil {
				t.Fatal(err)
			}
			doubt := ""
			if len(p.doubt) == 1 {
				doubt = p.doubt[0]
			}
			if known != tc.known || len(p.rounds) != tc.rounds || doubt != tc.doubt || len(p.doubt) > 1 || p.succeeded != tc.settled {
				t.Fatalf("known %v, rounds %v, doubt %q, succeeded %d; want %v, %d rounds, %q, %d", known, p.rounds, p.doubt, p.succeeded, tc.known, tc.rounds, tc.doubt, tc.settled)
			}
			for k, v := range p.rounds {
				if v != float64(k+1) {
					t.Fatalf("round %d's output %v", k+1, v)
				}
			}
		})
	}
}
