package main

import (
	"strings"
	"testing"
)

// TestRunsShowCalls: `rein runs show` lists the call records of a for_each
// step, one per item, in text and in JSON.
func TestRunsShowCalls(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "each")
	code, out, stderr := fx.cli("run", fx.dir, "--input-json", `{"orders": ["A-1", "A-2"]}`, "--output", "json")
	var res struct {
		RunID  string `json:"run_id"`
		Status string
	}
	decodeOne(t, out, &res)
	if code != exitOK || res.Status != "succeeded" {
		t.Fatalf("rein run: exit %d %+v\n%s", code, res, stderr)
	}
	var view struct {
		Calls []struct {
			StepID  string `json:"step_id"`
			Key     string
			Item    int
			Kind    string
			Name    string
			Status  string
			ArgsSHA string `json:"args_sha256"`
			Output  map[string]any
		}
	}
	code, out, _ = fx.cli("runs", "show", res.RunID, "-o", "json")
	decodeOne(t, out, &view)
	if code != exitOK || len(view.Calls) != 2 {
		t.Fatalf("runs show json: exit %d, %d calls\n%s", code, len(view.Calls), out)
	}
	for k, c := range view.Calls {
		if c.StepID != "book" || c.Item != k || c.Key != res.RunID+"/book["+string(rune('0'+k))+"]/1" || c.Kind != "tool" ||
			c.Name != "record" || c.Status != "succeeded" || c.ArgsSHA == "" || c.Output["recorded"] != true {
			t.Errorf("call %d = %+v", k, c)
		}
	}
	code, out, _ = fx.cli("runs", "show", res.RunID)
	for _, want := range []string{"calls:", "book[0]", "book[1]", "tool record", "succeeded", `output: {"recorded":true}`} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("runs show lacks %q: exit %d\n%s", want, code, out)
		}
	}
}
