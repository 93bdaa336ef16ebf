package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// examples/process-clerk: the workflow tool's response_hook appends the
// task's result, as the tool answered it, to the agent's final answer —
// in the JSON answer and after the printed text alike.
func TestProcessClerkResponseHook(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "rein.db")
	code, out, stderr := cli(t, "agent", "../../examples/process-clerk", "file a welded steel frame", "--db", db, "--output", "json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	var res struct {
		Answer string `json:"answer"`
	}
	decodeOne(t, out, &res)
	m := regexp.MustCompile(`^I started the process task for the welded steel frame\.\n\nWorkflow results \(process_workflow\):\n` +
		`- task (\S+) \(workflow process\): waiting; waits on parse \(submit\); deliverables: assign \(not produced yet\)$`).FindStringSubmatch(res.Answer)
	if m == nil {
		t.Fatalf("answer:\n%s", res.Answer)
	}
	// the task it names is the run the tool started, as it says
	code, out, stderr = cli(t, "runs", "show", m[1], "--db", db)
	if code != exitOK || !regexp.MustCompile(`(?m)^  flow +process `).MatchString(out) || !regexp.MustCompile(`(?m)^  status +waiting`).MatchString(out) {
		t.Errorf("runs show %s: exit %d\n%s%s", m[1], code, out, stderr)
	}
	code, out, stderr = cli(t, "agent", "../../examples/process-clerk", "file a welded steel frame", "--db", filepath.Join(t.TempDir(), "rein.db"))
	if code != exitOK || !strings.Contains(out, "welded steel frame.\n\nWorkflow results (process_workflow):\n- task ") {
		t.Errorf("text: exit %d\n%s%s", code, out, stderr)
	}
}
