package invoke

import (
	"fmt"
	"testing"

	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
)

// TestTaintCarried: what one Invalid tainted, restored into another (a
// later attempt of the run), flags that origin's arguments there; merged
// sets keep each origin once, in the order first tainted, with their rows
// once each and at most MaxTaintVia of them.
func TestTaintCarried(t *testing.T) {
	row := func(i int) store.Invalidation {
		return store.Invalidation{Resource: fmt.Sprint("bank:payment/", i), RunID: "run-0", CallKey: "run-0/pay/1"}
	}
	a := &Invalid{}
	a.taint(safety.OriginDB, []store.Invalidation{row(1)})
	b := &Invalid{}
	b.Restore(a.Taints())
	prov := safety.Provenance{}
	prov.Add("/n", safety.OriginDB)
	if via, ok := b.taintedIn(prov); !ok || len(via) != 1 || via[0].Resource != "bank:payment/1" {
		t.Fatalf("restored taint: %v %v, want db tainted via bank:payment/1", via, ok)
	}
	if (*Invalid)(nil).Taints() != nil || (&Invalid{}).Taints() != nil {
		t.Error("an Invalid that tainted nothing reports taints")
	}
	run := MergeTaints(nil, a.Taints())
	run = MergeTaints(run, []Taint{{Origin: "tool:x", Via: []store.Invalidation{row(2)}}, {Origin: safety.OriginDB, Via: []store.Invalidation{row(1), row(3)}}})
	if len(run) != 2 || run[0].Origin != safety.OriginDB || run[1].Origin != "tool:x" || len(run[0].Via) != 2 || run[0].Via[1].Resource != "bank:payment/3" {
		t.Fatalf("merged %+v", run)
	}
	var many []store.Invalidation
	for i := range 3 * MaxTaintVia {
		many = append(many, row(i))
	}
	if got := MergeTaints(run, []Taint{{Origin: safety.OriginDB, Via: many}}); len(got[0].Via) != MaxTaintVia || len(run[0].Via) != 2 {
		t.Errorf("kept %d rows (the run's set changed to %d), want %d and the run's untouched", len(got[0].Via), len(run[0].Via), MaxTaintVia)
	}
}
