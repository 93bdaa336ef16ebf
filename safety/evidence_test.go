package safety_test

import (
	"reflect"
	"testing"

	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

func TestEvidenceTrace(t *testing.T) {
	t.Parallel()
	var ev safety.Evidence
	ev.AddUser("input", "Please onboard ACME  Corp, contact ops@acme.example, order 12345.")
	lookup := tool.Spec{Name: "lookup_customer", Effect: tool.EffectRead}
	ev.AddTool("turn1/call1", &lookup, map[string]any{"id": "cus_981", "region": "eu-west", "seats": 40.0})
	quote := tool.Spec{Name: "quote", Effect: tool.EffectNone}
	ev.AddObservation("turn1/call2", &quote, `{"total": 1234.5}`)
	args := map[string]any{
		"name":    "Acme Corp",         // user, normalised
		"email":   "ops@acme.example",  // user
		"order":   12345.0,             // user: a number found in text
		"partial": 1234.0,              // inferred: "1234" is not a word of "12345" nor of "1234.5"
		"id":      "cus_981",           // db
		"region":  "EU-WEST",           // db, case folded
		"seats":   40.0,                // inferred: too short to be found
		"total":   1234.5,              // tool:quote
		"flag":    true,                // inferred: booleans are never found
		"note":    "priority customer", // inferred
		"tags":    []any{},             // inferred (an empty list)
	}
	got := ev.Trace(args)
	want := safety.Provenance{
		"/name": {"user"}, "/email": {"user"}, "/order": {"user"}, "/partial": {"inferred"},
		"/id": {"db"}, "/region": {"db"}, "/seats": {"inferred"}, "/total": {"tool:quote"},
		"/flag": {"inferred"}, "/note": {"inferred"}, "/tags": {"inferred"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Trace =\n%v\nwant\n%v", got, want)
	}
}

func TestEvidenceVerify(t *testing.T) {
	t.Parallel()
	var ev safety.Evidence
	ev.AddUser("input", "create the customer")
	create := tool.Spec{Name: "create_customer", Effect: tool.EffectWrite}
	ev.AddTool("step create", &create, map[string]any{"region": "ap-south"})
	lookup := tool.Spec{Name: "lookup", Effect: tool.EffectRead}
	ev.AddTool("step lookup", &lookup, map[string]any{"region": "eu-west", "owner": "Dana Reyes"})
	args := map[string]any{"region": "eu-west", "other": "ap-south", "who": map[string]any{"owner": "dana reyes", "team": "sales"}, "owner": "Dana Reyes"}
	prov := safety.Provenance{"/region": {"inferred"}, "/other": {"inferred"}, "/who": {"inferred"}, "/owner": {"constant"}}
	got := ev.Verify(args, prov)
	// /other is only in a write tool's output, /who has a leaf (sales) no
	// tool confirms, /owner is not inferred.
	want := []safety.Verification{{Pointer: "/region", Tool: "lookup", Ref: "step lookup"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Verify = %+v, want %+v", got, want)
	}
	var empty safety.Evidence
	if v := empty.Verify(args, prov); v != nil {
		t.Fatalf("empty evidence verified %+v", v)
	}
}
