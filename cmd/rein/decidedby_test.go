package main

import (
	"encoding/json"
	"os/user"
	"strings"
	"testing"
)

// TestDecideByRecordsWhoDecided: --by names who decided; it is recorded
// with the decision and shown by rein runs show, in text and JSON. Without
// --by the decision is the OS user's.
func TestDecideByRecordsWhoDecided(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "approval")
	res := fx.run(exitWaiting, `{}`)
	var d decision
	code, out, stderr := fx.cli("runs", "approve", res.RunID, "review", "--by", "alice", "-o", "json")
	decodeOne(t, out, &d)
	if code != exitWaiting || d.Approval.DecidedBy != "alice" {
		t.Fatalf("approve --by alice: exit %d %+v\n%s", code, d, stderr)
	}
	code, out, stderr = fx.cli("runs", "approve", res.RunID, "publish", "-o", "json")
	decodeOne(t, out, &d)
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if code != exitOK || d.Approval.DecidedBy != u.Username {
		t.Fatalf("approve without --by: exit %d, decided by %q, want the OS user %q\n%s", code, d.Approval.DecidedBy, u.Username, stderr)
	}
	code, out, _ = fx.cli("runs", "show", res.RunID)
	if code != exitOK || !strings.Contains(out, "step review (approval): approved by alice") ||
		!strings.Contains(out, "step publish (approval): approved by "+u.Username) {
		t.Fatalf("runs show does not say who decided: exit %d\n%s", code, out)
	}
	code, out, _ = fx.cli("runs", "show", res.RunID, "-o", "json")
	var v struct {
		Approvals []struct {
			StepID    string `json:"step_id"`
			DecidedBy string `json:"decided_by"`
		}
	}
	if err := json.Unmarshal([]byte(out), &v); code != exitOK || err != nil {
		t.Fatalf("runs show -o json: exit %d %v\n%s", code, err, out)
	}
	by := map[string]string{}
	for _, a := range v.Approvals {
		by[a.StepID] = a.DecidedBy
	}
	if by["review"] != "alice" || by["publish"] != u.Username {
		t.Fatalf("runs show -o json: decided by %v", by)
	}
}
