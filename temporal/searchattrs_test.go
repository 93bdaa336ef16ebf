package temporal

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
)

// TestSearchAttributes: a run started with rein's search attributes
// upserts ReinStatus each time its status changes (and only then), so
// that the Temporal UI lists it by status; its flow and tenant are the
// start's. A run started without them (a namespace that lacks them, or a
// history recorded before) upserts nothing.
func TestSearchAttributes(t *testing.T) {
	for _, with := range []bool{true, false} {
		l := newLedger()
		p := load(t, approvalFlow, l.tool("ok", true), l.tool("pay", false))
		h := newHarness(t, p)
		in, err := StartInput(p, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		in.Tenant, in.SearchAttributes = "acme", with
		if with {
			if err := h.env.SetTypedSearchAttributesOnStart(startAttributes(&in)); err != nil {
				t.Fatal(err)
			}
		}
		var statuses []string
		h.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
			sa := args.Get(0).(temporal.SearchAttributes)
			v, ok := sa.GetKeyword(keyStatus)
			if !ok || sa.Size() != 1 {
				t.Errorf("upsert %v: want ReinStatus alone", sa.GetUntypedValues())
			}
			statuses = append(statuses, v)
		}).Return(nil).Maybe()
		h.env.RegisterDelayedCallback(func() {
			h.update(Decision{Step: "sign", Action: ActionApprove})
		}, time.Minute)
		h.env.RegisterDelayedCallback(func() {
			h.update(Decision{Step: "pay", Action: ActionSettle, Output: json.RawMessage(`{}`)})
		}, 2*time.Minute)
		h.env.ExecuteWorkflow(p.Flow.Name, in)
		if err := h.env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		want := "waiting running waiting running succeeded"
		if !with {
			want = ""
		}
		if got := strings.Join(statuses, " "); got != want {
			t.Errorf("search attributes %v: ReinStatus upserts %q, want %q", with, got, want)
		}
	}
	in := &Start{Flow: "f", Tenant: "acme"}
	sa := startAttributes(in)
	flow, _ := sa.GetKeyword(keyFlow)
	tenant, _ := sa.GetKeyword(keyTenant)
	status, _ := sa.GetKeyword(keyStatus)
	if flow != "f" || tenant != "acme" || status != "running" {
		t.Errorf("start attributes %v", sa.GetUntypedValues())
	}
}
