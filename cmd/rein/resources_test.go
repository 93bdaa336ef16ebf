package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestResourcesInvalidatedAcrossRuns: the built binary remediates a run
// whose notification cannot be taken back; rein resources list shows the
// mail address it invalidated, with the run and premise; a later run of
// the flow waits for a person before notifying it (rule
// invalidated-resource), which rein runs show and rein runs why say; once
// rein resources clear cleared it, the flow runs through.
func TestResourcesInvalidatedAcrossRuns(t *testing.T) {
	t.Parallel()
	fx := newCRM(t)
	if code, out, stderr := fx.bin("run", "impact.yaml", "--input-json", `{"name": "ada"}`); code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr := fx.bin("resources", "list", "-o", "json")
	if code != exitOK || strings.TrimSpace(out) != "[]" {
		t.Fatalf("resources list before any remediation: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, stderr = fx.bin("runs", "remediate", "last", "--premise", "region"); code != exitWaiting {
		t.Fatalf("remediate: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = fx.bin("resources", "list", "-o", "json")
	var rows []struct {
		Resource string
		RunID    string `json:"run_id"`
		CallKey  string `json:"call_key"`
		Premise  string
	}
	if err := json.Unmarshal([]byte(out), &rows); code != exitOK || err != nil {
		t.Fatalf("resources list: exit %d %v\n%s\n%s", code, err, out, stderr)
	}
	if len(rows) != 1 || rows[0].Resource != "mail:ops@example.com" || rows[0].Premise != "region" || !strings.HasSuffix(rows[0].CallKey, "/notify/1") {
		t.Fatalf("resources list: %+v", rows)
	}
	first := rows[0].RunID
	if code, out, _ = fx.bin("resources", "list"); code != exitOK || !strings.Contains(out, "mail:ops@example.com") || !strings.Contains(out, first) {
		t.Errorf("resources list (text): exit %d\n%s", code, out)
	}

	// a later run notifies the same address: it waits for a person.
	code, out, stderr = fx.bin("run", "impact.yaml", "--input-json", `{"name": "bob"}`)
	if code != exitWaiting {
		t.Fatalf("run 2: exit %d, want waiting\n%s\n%s", code, out, stderr)
	}
	code, out, _ = fx.bin("runs", "show", "last")
	for _, want := range []string{"invalidated resources touched:", "mail:ops@example.com: invalidated by run " + first, "premise region", "held for a person", "rein resources clear mail:ops@example.com"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs show lacks %q: exit %d\n%s", want, code, out)
		}
	}
	if code, out, _ = fx.bin("runs", "why", "last", "notify"); code != exitOK || !strings.Contains(out, "mail:ops@example.com: invalidated by run "+first) {
		t.Errorf("runs why notify: exit %d\n%s", code, out)
	}
	if code, out, _ = fx.bin("resources", "clear", "mail:ops@example.com", "--tenant", "nobody", "-o", "json"); code != exitOK || !strings.Contains(out, `"cleared": 0`) {
		t.Errorf("clear another tenant's: exit %d\n%s", code, out)
	}
	if code, out, _ = fx.bin("resources", "clear", "mail:ops@example.com"); code != exitOK || !strings.Contains(out, "cleared mail:ops@example.com: 1") {
		t.Fatalf("clear: exit %d\n%s", code, out)
	}
	if code, out, stderr = fx.bin("resources", "list"); code != exitOK || out != "" || !strings.Contains(stderr, "no invalidated resources") {
		t.Errorf("resources list after the clear: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, stderr = fx.bin("run", "impact.yaml", "--input-json", `{"name": "cy"}`); code != exitOK {
		t.Fatalf("run 3 after the clear: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, _, stderr = fx.bin("resources", "clear"); code != exitUsage {
		t.Errorf("clear without a resource: exit %d\n%s", code, stderr)
	}
}
