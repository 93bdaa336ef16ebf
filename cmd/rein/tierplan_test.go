package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// examples/planned-agent: at risk tier 3 the agent's direct call of a
// side-effect tool is refused (blocked, nothing ran) with an observation
// that says to plan; the plan it then sends is reviewed by agent.yaml's
// review: model, not the agent's model, and runs.
func TestPlannedAgentExample(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "trace.jsonl")
	code, out, stderr := cli(t, "agent", "../../examples/planned-agent", "save ann's plan", "--db", filepath.Join(dir, "rein.db"), "--trace", tracePath, "--output", "json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	var res struct {
		Status string `json:"status"`
		Calls  []struct {
			Tool        string `json:"tool"`
			Status      string `json:"status"`
			Observation string `json:"observation"`
		} `json:"calls"`
	}
	decodeOne(t, out, &res)
	var got []string
	for _, c := range res.Calls {
		got = append(got, c.Tool+":"+c.Status)
	}
	if res.Status != "answered" || strings.Join(got, " ") != "lookup_customer:ok save_customer:blocked execute_plan:ok" {
		t.Fatalf("status %s, calls %v", res.Status, got)
	}
	if o := res.Calls[1].Observation; !strings.Contains(o, "risk tier 3") || !strings.Contains(o, "execute_plan") {
		t.Errorf("the refused call's observation: %q", o)
	}
	f, err := os.Open(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	models := map[string]string{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var e struct {
			Kind, Decision, Model string
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Kind == "model_call" {
			if m, ok := models[e.Decision]; ok && m != e.Model {
				t.Errorf("decision %s asked of %s and %s", e.Decision, m, e.Model)
			}
			models[e.Decision] = e.Model
		}
	}
	if models["review"] != "reviewer-model" || models["agent"] != "agent-model" {
		t.Errorf("models by decision: %v", models)
	}
}

// agent.yaml review: names a model that must resolve, located.
func TestAgentReviewModelLocated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"agent.yaml": "model: openai/gpt-4o-mini\ntools: {}\nreview: {model: reviewer}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr := cli(t, "validate", dir)
	if code != exitUsage || !strings.Contains(stderr, "agent.yaml:3:17: review: model") {
		t.Errorf("exit %d\n%s%s", code, out, stderr)
	}
}
