package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuardrailTripsAreShown: a guardrail's trip is journaled and shown
// where a user looks: rein runs why RUN (which guardrail, its kind, side,
// what it did and why, never the text), rein runs why RUN STEP on the llm
// step, rein runs show, and an agent's transcript (an answer held for a
// person) and session.
func TestGuardrailTripsAreShown(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"flow.yaml": `name: g
steps:
  - id: answer
    type: llm
    model: m
    prompt_template: "Answer: {input.q}"
    guardrails:
      output: [{name: no_notes, deny: [internal-only]}]
`,
		"script.yaml": `replies:
  - step: answer
    raw: "internal-only: watch list"
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(t.TempDir(), "rein.db")
	code, out, stderr := cli(t, "run", dir, "--input-json", `{"q": "notes"}`, "--db", db, "-o", "json")
	var res struct {
		RunID string `json:"run_id"`
	}
	if i := strings.Index(out, "{"); i >= 0 {
		_ = json.Unmarshal([]byte(out[i:]), &res)
	}
	if code != exitRunFailed || res.RunID == "" {
		t.Fatalf("rein run: exit %d\n%s\n%s", code, out, stderr)
	}
	const line = `step answer attempt=1: output guardrail no_notes (deny) tripped and stopped the step: the text holds the denied phrase "internal-only"`
	for _, args := range [][]string{{"runs", "why", res.RunID}, {"runs", "why", res.RunID, "answer"}, {"runs", "show", res.RunID}} {
		code, out, stderr := cli(t, append(args, "--db", db)...)
		if code != exitOK || !strings.Contains(out, line) || strings.Contains(out, "watch list") {
			t.Errorf("rein %s: exit %d, want %q\n%s\n%s", strings.Join(args, " "), code, line, out, stderr)
		}
	}
	code, out, stderr = cli(t, "runs", "why", res.RunID, "--db", db, "-o", "json")
	var why struct {
		Guardrails []struct {
			StepID string `json:"step_id"`
			Name   string `json:"name"`
			Kind   string `json:"kind"`
			Side   string `json:"side"`
			OnTrip string `json:"on_trip"`
		} `json:"guardrails"`
	}
	if err := json.Unmarshal([]byte(out), &why); err != nil || code != exitOK || len(why.Guardrails) != 1 {
		t.Fatalf("runs why -o json: exit %d, %v\n%s\n%s", code, err, out, stderr)
	}
	if g := why.Guardrails[0]; g.StepID != "answer" || g.Name != "no_notes" || g.Kind != "deny" || g.Side != "output" || g.OnTrip != "stop" {
		t.Errorf("runs why -o json: %+v", g)
	}
}

// TestAgentGuardrailAskIsShown: an agent's answer held by an output
// guardrail with on_trip: ask shows in its transcript (rein runs show)
// and its session (rein sessions show), with why, never the text it
// tripped on beyond the answer's own preview.
func TestAgentGuardrailAskIsShown(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"agent.yaml": `name: notes
model: m
execute_plan: false
guardrails:
  output:
    - {name: no_internal_notes, deny: [internal-only], on_trip: ask}
`,
		"script.yaml": `replies:
  - step: agent
    decision: agent
    turn: 1
    raw: "Refunded. internal-only: customer is on watch list"
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(t.TempDir(), "rein.db")
	code, out, stderr := cli(t, "chat", dir, "--session", "s1", "-m", "refund me", "--db", db, "--output", "json")
	var res struct {
		RunID string `json:"run_id"`
	}
	if i := strings.Index(out, "{"); i >= 0 {
		_ = json.Unmarshal([]byte(out[i:]), &res)
	}
	if code != exitWaiting || res.RunID == "" {
		t.Fatalf("rein agent: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = cli(t, "runs", "show", res.RunID, "--db", db)
	for _, want := range []string{
		`held for a person: output guardrail no_internal_notes tripped (on_trip: ask): the text holds the denied phrase "internal-only"`,
		`step agent turn 1 attempt=1: output guardrail no_internal_notes (deny) tripped and asked a person (on_trip: ask)`,
	} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("runs show lacks %q: exit %d\n%s\n%s", want, code, out, stderr)
		}
	}
	code, out, stderr = cli(t, "sessions", "show", "s1", "--db", db)
	if want := `guardrail no_internal_notes (deny, output) tripped and asked a person: the text holds the denied phrase "internal-only"`; code != exitOK || !strings.Contains(out, want) {
		t.Errorf("sessions show lacks %q: exit %d\n%s\n%s", want, code, out, stderr)
	}
}

// TestExampleGuardedExtract runs examples/guarded-extract: a clean email
// passes; a card number stops the step before the model is called; an
// internal note waits for a person, rein runs why says which guardrail
// and why, and approving accepts the extraction (the model asked once).
func TestExampleGuardedExtract(t *testing.T) {
	dir := "../../examples/guarded-extract"
	db := filepath.Join(t.TempDir(), "rein.db")
	run := func(input string) (int, string, string) {
		t.Helper()
		args := []string{"run", dir, "--db", db}
		if input != "" {
			args = append(args, "--input-json", input)
		}
		return cli(t, args...)
	}
	if code, out, stderr := run(""); code != exitOK || !strings.Contains(out, "Refund the duplicate charge of order 1042") {
		t.Fatalf("the clean email: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr := run(`{"email": "Card 4111 1111 1111 1111, order 1042, refund 25 EUR"}`)
	if code != exitRunFailed || !strings.Contains(out+stderr, "input guardrail no_card_numbers tripped on the prompt") || strings.Contains(out+stderr, "4111") {
		t.Fatalf("a card number: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = run(`{"email": "Order 1042, 25 EUR, charged twice (customer on the watch list)"}`)
	if code != exitWaiting || !strings.Contains(out+stderr, "extract/guardrail/no_internal_notes") {
		t.Fatalf("an internal note: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = cli(t, "runs", "why", "last", "--db", db)
	if want := `step extract attempt=1: output guardrail no_internal_notes (deny) tripped and asked a person (on_trip: ask): the text holds the denied phrase "internal-only"`; code != exitOK || !strings.Contains(out, want) {
		t.Fatalf("runs why: exit %d, want %q\n%s\n%s", code, want, out, stderr)
	}
	code, out, stderr = cli(t, "runs", "approve", "last", "extract/guardrail/no_internal_notes", "--db", db)
	if code != exitOK || !strings.Contains(out, "Refund the duplicate charge") {
		t.Fatalf("approve: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = cli(t, "runs", "show", "last", "--db", db, "-o", "json")
	var v struct {
		Steps []struct {
			StepID   string `json:"step_id"`
			LLMCalls int    `json:"llm_calls"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != exitOK || len(v.Steps) != 2 || v.Steps[0].LLMCalls != 1 {
		t.Fatalf("runs show: exit %d, %v: the extraction was asked of the model again?\n%s\n%s", code, err, out, stderr)
	}
}
