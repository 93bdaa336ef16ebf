package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuardrailAskParksForAPerson: an output guardrail with on_trip: ask
// parks the agent run on an approval named for the guardrail (its message
// says why it tripped, not the text); approving it accepts the answer
// without asking the model again, rejecting it fails the run with the
// guardrail error.
func TestGuardrailAskParksForAPerson(t *testing.T) {
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
	const ref = "agent/turn1/guardrail/no_internal_notes"
	start := func() string {
		t.Helper()
		code, out, stderr := cli(t, "agent", dir, "refund me", "--db", db, "--output", "json")
		var res struct {
			RunID   string `json:"run_id"`
			Pending []struct {
				StepID  string `json:"step_id"`
				Message string `json:"message"`
			} `json:"pending"`
		}
		if i := strings.Index(out, "{"); i >= 0 {
			_ = json.Unmarshal([]byte(out[i:]), &res)
		}
		if code != exitWaiting || len(res.Pending) != 1 || res.Pending[0].StepID != ref ||
			!strings.Contains(res.Pending[0].Message, `output guardrail no_internal_notes tripped on the answer of turn 1: the text holds the denied phrase "internal-only"`) ||
			strings.Contains(res.Pending[0].Message, "watch list") {
			t.Fatalf("rein agent: exit %d\n%s\n%s", code, out, stderr)
		}
		return res.RunID
	}
	run := start()
	if code, out, stderr := cli(t, "runs", "approve", run, ref, "--db", db); code != exitOK || !strings.Contains(out, "Refunded.") {
		t.Fatalf("approve: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr := cli(t, "runs", "show", run, "--db", db, "-o", "json")
	if code != exitOK || !strings.Contains(out, `"llm_calls": 1`) {
		t.Fatalf("runs show: the approved answer was asked of the model again, or the run is not shown: exit %d\n%s\n%s", code, out, stderr)
	}

	run = start()
	code, out, stderr = cli(t, "runs", "reject", run, ref, "--comment", "not for customers", "--db", db)
	if code != exitRunFailed || !strings.Contains(out+stderr, "output guardrail no_internal_notes tripped") || !strings.Contains(out+stderr, "not for customers") {
		t.Fatalf("reject: exit %d\n%s\n%s", code, out, stderr)
	}
}

// TestLLMStepGuardrails: an llm step's input guardrail stops it before
// the model call, its output guardrail refuses the reply, each with the
// guardrail error naming the step and guardrail (never the matched
// text); a clean prompt and reply are the step's output.
func TestLLMStepGuardrails(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"flow.yaml": `name: g
steps:
  - id: answer
    type: llm
    model: m
    prompt_template: "Answer: {input.q}"
    guardrails:
      input: [{name: no_cards, regex: '\d{4} \d{4} \d{4} \d{4}'}]
      output: [{name: no_notes, deny: [internal-only]}]
`,
		"script.yaml": `replies:
  - step: answer
    contains: "notes"
    raw: "internal-only: watch list"
  - step: answer
    raw: "fine"
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(t.TempDir(), "rein.db")
	for _, c := range []struct {
		q, want string
		code    int
	}{
		{"card 4111 1111 1111 1111", "error (guardrail): step answer: llm step answer: input guardrail no_cards tripped on the prompt", exitRunFailed},
		{"notes please", "error (guardrail): step answer: llm step answer: output guardrail no_notes tripped on the reply: the text holds the denied phrase \"internal-only\"", exitRunFailed},
		{"hi", `"answer": "fine"`, exitOK},
	} {
		code, out, stderr := cli(t, "run", dir, "--input-json", `{"q": "`+c.q+`"}`, "--db", db)
		if code != c.code || !strings.Contains(out+stderr, c.want) || strings.Contains(out+stderr, "1111") && c.code != exitOK ||
			strings.Contains(c.q, "card") && strings.Contains(out, "model_calls") {
			t.Errorf("%q: exit %d\n%s\n%s", c.q, code, out, stderr)
		}
	}
}

// TestOutputGuardrailHidesTheStreamedReply: the reply of an agent with
// output guardrails is not streamed while the model writes it, so an
// answer a guardrail refuses is never printed (rein agent prints a
// model's text live otherwise).
func TestOutputGuardrailHidesTheStreamedReply(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"agent.yaml": `name: notes
model: m
execute_plan: false
guardrails:
  output:
    - {name: no_internal_notes, deny: [internal-only]}
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
	code, out, stderr := cli(t, "agent", dir, "refund me", "--db", filepath.Join(t.TempDir(), "rein.db"))
	if code == exitOK || !strings.Contains(stderr+out, "no_internal_notes") {
		t.Fatalf("rein agent: exit %d, want the guardrail's failure\n%s\n%s", code, out, stderr)
	}
	if strings.Contains(out+stderr, "watch list") {
		t.Fatalf("the refused answer was printed:\nstdout: %s\nstderr: %s", out, stderr)
	}
}

// TestLLMStepGuardrailAsk: an llm step's guardrails with on_trip: ask
// park the run on an approval naming the step and guardrail (its message
// says what tripped, never the text). An input trip: approve sends the
// prompt anyway. An output trip: the run stays waiting across a resume
// by another process, approve accepts the recorded reply without asking
// the model again, reject fails the run with the guardrail error and the
// comment, settle is checked against the output_schema.
func TestLLMStepGuardrailAsk(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"flow.yaml": `name: g
steps:
  - id: answer
    type: llm
    model: m
    prompt_template: "Answer: {input.q}"
    output_schema:
      type: object
      required: [reply]
      properties: {reply: {type: string}}
    guardrails:
      input: [{name: no_cards, regex: '\d{4} \d{4} \d{4} \d{4}', on_trip: ask}]
      output: [{name: no_notes, deny: [internal-only], on_trip: ask}]
`,
		"script.yaml": `replies:
  - step: answer
    contains: "notes"
    raw: '{"reply": "internal-only: watch list"}'
  - step: answer
    raw: '{"reply": "fine"}'
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(t.TempDir(), "rein.db")
	type pending struct {
		StepID  string `json:"step_id"`
		Message string `json:"message"`
	}
	start := func(q, ref, want string) string {
		t.Helper()
		code, out, stderr := cli(t, "run", dir, "--input-json", `{"q": "`+q+`"}`, "--db", db, "-o", "json")
		var res struct {
			RunID   string    `json:"run_id"`
			Pending []pending `json:"pending"`
		}
		if i := strings.Index(out, "{"); i >= 0 {
			_ = json.Unmarshal([]byte(out[i:]), &res)
		}
		if code != exitWaiting || len(res.Pending) != 1 || res.Pending[0].StepID != ref ||
			!strings.Contains(res.Pending[0].Message, want) ||
			strings.Contains(res.Pending[0].Message, "watch list") || strings.Contains(res.Pending[0].Message, "1111") {
			t.Fatalf("rein run %q: exit %d\n%s\n%s", q, code, out, stderr)
		}
		return res.RunID
	}
	llmCalls := func(run string) string {
		t.Helper()
		code, out, stderr := cli(t, "runs", "show", run, "--db", db, "-o", "json")
		if code != exitOK {
			t.Fatalf("runs show: exit %d\n%s\n%s", code, out, stderr)
		}
		return out
	}

	// input: approve sends the prompt anyway.
	run := start("card 4111 1111 1111 1111", "answer/guardrail/no_cards",
		`llm step answer: input guardrail no_cards tripped on the prompt: the text matches`)
	if code, out, stderr := cli(t, "runs", "approve", run, "answer/guardrail/no_cards", "--db", db); code != exitOK || !strings.Contains(out, "fine") {
		t.Fatalf("approve the input: exit %d\n%s\n%s", code, out, stderr)
	}

	// input, then output: each trip waits; both decisions hold.
	run = start("card 4111 1111 1111 1111 notes", "answer/guardrail/no_cards", "input guardrail no_cards tripped on the prompt")
	code, out, stderr := cli(t, "runs", "approve", run, "answer/guardrail/no_cards", "--db", db)
	if code != exitWaiting || !strings.Contains(out+stderr, "answer/guardrail/no_notes") {
		t.Fatalf("approve the input of a prompt whose reply trips too: exit %d, want it waiting on the output\n%s\n%s", code, out, stderr)
	}
	if code, out, stderr := cli(t, "runs", "approve", run, "answer/guardrail/no_notes", "--db", db); code != exitOK || !strings.Contains(out, "watch list") {
		t.Fatalf("approve the output after the input: exit %d\n%s\n%s", code, out, stderr)
	}

	// output: waits across a resume; approve takes the recorded reply.
	const outRef = "answer/guardrail/no_notes"
	const outWhy = `llm step answer: output guardrail no_notes tripped on the reply: the text holds the denied phrase "internal-only"; approve to accept the reply as it is`
	run = start("notes please", outRef, outWhy)
	if code, out, stderr := cli(t, "runs", "resume", run, "--db", db); code != exitWaiting || !strings.Contains(out+stderr, outRef) {
		t.Fatalf("resume of a waiting run: exit %d, want it still waiting on %s\n%s\n%s", code, outRef, out, stderr)
	}
	if code, out, stderr := cli(t, "runs", "approve", run, outRef, "--db", db); code != exitOK || !strings.Contains(out, "watch list") {
		t.Fatalf("approve the output: exit %d\n%s\n%s", code, out, stderr)
	}
	if out := llmCalls(run); !strings.Contains(out, `"llm_calls": 1`) {
		t.Fatalf("the approved reply was asked of the model again:\n%s", out)
	}

	// reject: the guardrail error with the comment.
	run = start("notes please", outRef, outWhy)
	code, out, stderr = cli(t, "runs", "reject", run, outRef, "--comment", "not for customers", "--db", db)
	if code != exitRunFailed || !strings.Contains(out+stderr, "llm step answer: output guardrail no_notes tripped on the reply") ||
		!strings.Contains(out+stderr, "not for customers") || !strings.Contains(out+stderr, "guardrail") {
		t.Fatalf("reject: exit %d\n%s\n%s", code, out, stderr)
	}

	// settle: a person's output, checked against the output_schema.
	run = start("notes please", outRef, outWhy)
	code, out, stderr = cli(t, "runs", "settle", run, outRef, "--value", `{"reply": 3}`, "--db", db)
	if code != exitRunFailed || !strings.Contains(out+stderr, "settled output") {
		t.Fatalf("settle with an output that breaks the schema: exit %d\n%s\n%s", code, out, stderr)
	}
	run = start("notes please", outRef, outWhy)
	code, out, stderr = cli(t, "runs", "settle", run, outRef, "--value", `{"reply": "written by a person"}`, "--db", db)
	if code != exitOK || !strings.Contains(out, "written by a person") {
		t.Fatalf("settle: exit %d\n%s\n%s", code, out, stderr)
	}
}
