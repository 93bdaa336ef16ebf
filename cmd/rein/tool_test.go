package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolProcessWorkflow drives examples/process-workflow from the shell:
// each action prints the workflow tool's answer (or its error object) and
// exits with the task's code; runs artifacts lists what was accepted.
func TestToolProcessWorkflow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, deliveries := filepath.Join(dir, "rein.db"), filepath.Join(dir, "out")
	flow := filepath.Join("..", "..", "examples", "process-workflow")
	type answer struct {
		TaskID      string `json:"task_id"`
		Status      string `json:"status"`
		NextActions []struct {
			StepID string `json:"step_id"`
			Action string `json:"action"`
		} `json:"next_actions"`
		Delivery *struct {
			Files []struct{ Name, Path string } `json:"files"`
		} `json:"delivery"`
		ErrorType string                     `json:"error_type"`
		Problems  []struct{ Pointer string } `json:"problems"`
	}
	step := func(want int, args ...string) answer {
		t.Helper()
		code, out, stderr := cli(t, append(append([]string{"tool", flow}, args...), "--db", db, "--deliveries", deliveries)...)
		if code != want {
			t.Fatalf("rein tool %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, stderr)
		}
		var a answer
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			t.Fatalf("rein tool %v: stdout is no JSON object: %v\n%s", args, err, out)
		}
		return a
	}
	a := step(exitWaiting, "start", "--session", "s1", "--input-json", `{"description":"a welded frame"}`)
	task := a.TaskID
	if len(a.NextActions) != 1 || a.NextActions[0].StepID != "parse" {
		t.Fatalf("start: %+v", a)
	}
	data := filepath.Join(dir, "parse.json")
	if err := os.WriteFile(data, []byte(`{"items":["frame"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	step(exitWaiting, "submit", "--task", task, "--step", "parse", "--skill", "parse-input", "--data", "@"+data)
	bad := step(exitUsage, "submit", "--task", task, "--step", "route", "--data", `{"steps":"cut"}`)
	if bad.ErrorType != "business" || len(bad.Problems) != 2 {
		t.Errorf("broken contract: %+v", bad)
	}
	step(exitWaiting, "submit", "--task", task, "--step", "route", "--data", `{"route":"paint"}`)
	step(exitOK, "submit_from_source", "--task", task, "--step", "assign")
	d := step(exitOK, "prepare_delivery", "--task", task)
	if d.Delivery == nil || len(d.Delivery.Files) != 5 || !strings.HasPrefix(d.Delivery.Files[3].Path, deliveries) {
		t.Fatalf("delivery: %+v", d.Delivery)
	}
	step(exitConflict, "cancel", "--task", task)

	code, out, stderr := cli(t, "runs", "artifacts", task, "--db", db)
	if code != exitOK || !strings.Contains(out, "assign  adapter:material-assigner.v2  1") || !strings.Contains(out, "parse   agent") {
		t.Errorf("runs artifacts: exit %d\n%s%s", code, out, stderr)
	}
}

// TestRunWaitsForASubmission: rein run of a flow whose first step is a
// submit step waits (exit 3) and says how an agent, or a person, goes on.
func TestRunWaitsForASubmission(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "rein.db")
	code, out, stderr := cli(t, "run", filepath.Join("..", "..", "examples", "process-workflow"), "--session", "s", "--db", db)
	all := out + stderr
	if code != exitWaiting || !strings.Contains(all, "step parse (submission)") || !strings.Contains(all, "rein tool FLOW submit --data 'JSON' --task ") ||
		strings.Contains(all, "rein runs approve") {
		t.Errorf("exit %d\n%s", code, all)
	}
}
