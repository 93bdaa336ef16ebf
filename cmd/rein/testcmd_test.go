package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scoredFlow has an input schema with bounds, an enum and
// additionalProperties: false, an llm step with an output_schema (no model
// configured: rein test answers it), a read-only exec tool with both
// schemas, and a flow policy rule that holds on high scores.
const scoredFlow = `name: scored
inputs:
  type: object
  properties:
    n: {type: integer, minimum: 1, maximum: 3}
    kind: {enum: [a, b]}
  required: [n]
  additionalProperties: false
steps:
  - id: score
    prompt_template: "score {input.n}"
    output_schema:
      type: object
      properties: {score: {type: integer, minimum: 0, maximum: 10}}
      required: [score]
  - id: check
    tool: check
    args: {score: "{score.score}"}
tools:
  check:
    command: ["./check.sh"]
    effect: read
    input_schema: {type: object, properties: {score: {type: integer}}, required: [score]}
    output_schema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
policy:
  rules:
    - {name: high-scores, tools: [check], when: "args.score > 5", verdict: require_approval, reason: high scores need a look}
`

type testReportJSON struct {
	Stubbed []string `json:"stubbed"`
	Cases   []struct {
		Name, Expect, Actual, Result, Why, Error string
		Approved                                 []string
		Policies                                 []firedPolicy
	} `json:"cases"`
	Summary map[string]int `json:"summary"`
}

// writeScored writes scoredFlow and its tool, which prints out, into a
// fresh folder.
func writeScored(t *testing.T, out string) string {
	t.Helper()
	dir := filepath.Dir(writeFlow(t, scoredFlow))
	script := "#!/bin/sh\ncat >/dev/null\necho '" + out + "'\n"
	if err := os.WriteFile(filepath.Join(dir, "check.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestTestListsStableCases(t *testing.T) {
	t.Parallel()
	dir := writeScored(t, `{"ok": true}`)
	code, first, stderr := cli(t, "test", dir, "--list", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	var list struct {
		Cases []struct {
			Name, Pointer, Expect string
			Value                 any
		}
	}
	decodeOne(t, first, &list)
	got := map[string]string{}
	for _, c := range list.Cases {
		got[c.Name] = c.Expect + " " + c.Pointer
	}
	for name, want := range map[string]string{
		"input/minimal":                               "accepted ",
		"input/n=maximum":                             "accepted /n",
		"input/n>maximum":                             "rejected /n",
		"input/-n (missing)":                          "rejected /n",
		`input/kind="b"`:                              "accepted /kind",
		"input/kind: not in enum":                     "rejected /kind",
		"input/rein_test_extra (additional property)": "rejected /rein_test_extra",
		"step score output/score>maximum":             "rejected /score",
		"step check output/ok: wrong type":            "rejected /ok",
		"step check args/score: wrong type":           "rejected /score",
	} {
		if got[name] != want {
			t.Errorf("case %q: %q, want %q", name, got[name], want)
		}
	}
	// the same flow gives the same cases, in the same order.
	if _, again, _ := cli(t, "test", dir, "--list", "-o", "json"); again != first {
		t.Error("two listings of one flow differ")
	}
	// --max-cases bounds each schema's cases and says how many were left out.
	code, out, _ := cli(t, "test", dir, "--list", "--max-cases", "2")
	if code != exitOK || !strings.Contains(out, "input: 11 more cases not made (--max-cases)") {
		t.Errorf("exit %d, out %s", code, out)
	}
}

func TestTestRunsCasesAndReportsPolicies(t *testing.T) {
	t.Parallel()
	dir := writeScored(t, `{"ok": true}`)
	code, out, stderr := cli(t, "test", dir, "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s\n%s", code, stderr, out)
	}
	var rep testReportJSON
	decodeOne(t, out, &rep)
	byName := map[string]int{}
	for i, c := range rep.Cases {
		byName[c.Name] = i
		if c.Result != resultOK {
			t.Errorf("%s: %s (%s; %s)", c.Name, c.Result, c.Why, c.Error)
		}
	}
	if rep.Summary[resultOK] != len(rep.Cases) || len(rep.Cases) < 25 {
		t.Errorf("summary %v of %d cases", rep.Summary, len(rep.Cases))
	}
	c := rep.Cases[byName["input/n>maximum"]]
	if c.Actual != "rejected" || !strings.Contains(c.Error, "at /n") {
		t.Errorf("n>maximum: %+v, want rejected at /n", c)
	}
	// the model's answer breaks the step's schema: the step fails, saying where.
	c = rep.Cases[byName["step score output/-score (missing)"]]
	if c.Actual != "failed" || !strings.Contains(c.Error, "missing property 'score'") {
		t.Errorf("-score: %+v", c)
	}
	// the maximum score reaches the tool's call, where the flow's rule holds.
	c = rep.Cases[byName["step score output/score=maximum"]]
	want := firedPolicy{Step: "check", Tool: "check", Rule: "high-scores", Verdict: "require_approval"}
	if c.Actual != "waiting" || len(c.Policies) != 1 || c.Policies[0] != want {
		t.Errorf("score=maximum: %+v, want waiting with %+v", c, want)
	}
	// the same flow gives the same report.
	if _, again, _ := cli(t, "test", dir, "-o", "json"); again != out {
		t.Error("two reports of one flow differ")
	}
	// --case runs one, and the text report says what fired.
	code, out, stderr = cli(t, "test", dir, "--case", "step score output/score=maximum")
	if code != exitOK || !strings.Contains(out, "high-scores=require_approval") || !strings.Contains(out, "1 case: 1 ok, 0 unexpected, 0 skipped") {
		t.Errorf("exit %d, out %s, stderr %s", code, out, stderr)
	}
}

func TestTestFailsOnUnexpected(t *testing.T) {
	t.Parallel()
	// the tool answers what its own output_schema refuses: every valid
	// case that reaches it fails, which is not what the schemas promise.
	dir := writeScored(t, `{"ok": "yes"}`)
	code, out, stderr := cli(t, "test", dir)
	if code != exitRunFailed || !strings.Contains(stderr, "did not behave as expected") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if !strings.Contains(out, "input/minimal: unexpected: the run failed") || !strings.Contains(out, "input/minimal: error: step check:") {
		t.Errorf("the report does not say why:\n%s", out)
	}
	// a case the schemas refuse still behaves: the input is refused first.
	if !strings.Contains(out, "input/n>maximum") {
		t.Errorf("no n>maximum line:\n%s", out)
	}
}

func TestTestUsage(t *testing.T) {
	t.Parallel()
	dir := writeScored(t, `{"ok": true}`)
	for _, args := range [][]string{
		{"--case", "input/nope"},
		{"--stub", "some"},
		{"--max-cases", "0"},
		{"-o", "yaml"},
	} {
		if code, _, stderr := cli(t, append([]string{"test", dir}, args...)...); code != exitUsage || stderr == "" {
			t.Errorf("%v: exit %d, stderr %s", args, code, stderr)
		}
	}
}

// TestTestStubsSideEffects runs the refund-policy example: its refund tool
// (effect: external) writes a file per call into $REIN_OUTBOX. rein test
// stubs it by default, so no case writes there; --stub none calls it.
func TestTestStubsSideEffects(t *testing.T) {
	outbox := t.TempDir()
	t.Setenv("REIN_OUTBOX", outbox)
	code, out, stderr := cli(t, "test", "../../examples/refund-policy", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s\n%s", code, stderr, out)
	}
	var rep testReportJSON
	decodeOne(t, out, &rep)
	if len(rep.Stubbed) != 1 || rep.Stubbed[0] != "send_refund" {
		t.Errorf("stubbed %v, want send_refund", rep.Stubbed)
	}
	policies := map[string]string{}
	for _, c := range rep.Cases {
		var fired []string
		for _, p := range c.Policies {
			fired = append(fired, p.String())
		}
		policies[c.Name] = c.Actual + ": " + strings.Join(fired, ", ")
	}
	for name, want := range map[string]string{
		"input/minimal":                 "waiting: large-refunds-approved=require_approval, watch-medium-refunds=require_approval (log only)",
		"input/amount=maximum":          "blocked: huge-refunds-blocked=block, watch-medium-refunds=require_approval (log only)",
		"input/amount>exclusiveMinimum": "succeeded: ",
		"input/amount=exclusiveMinimum": "rejected: ",
	} {
		if policies[name] != want {
			t.Errorf("%s: %q, want %q", name, policies[name], want)
		}
	}
	if entries, _ := os.ReadDir(outbox); len(entries) != 0 {
		t.Errorf("the stubbed refund tool wrote %d files into the outbox", len(entries))
	}
	// --stub all stubs the read-only lookup too.
	code, out, _ = cli(t, "test", "../../examples/refund-policy", "--stub", "all", "--case", "input/minimal", "-o", "json")
	decodeOne(t, out, &rep)
	if code != exitOK || strings.Join(rep.Stubbed, ",") != "lookup_order,send_refund" {
		t.Errorf("--stub all: exit %d, stubbed %v", code, rep.Stubbed)
	}
	code, _, stderr = cli(t, "test", "../../examples/refund-policy", "--stub", "none", "--case", "input/amount>exclusiveMinimum")
	if entries, _ := os.ReadDir(outbox); code != exitOK || len(entries) != 1 {
		t.Errorf("--stub none: exit %d, %d files in the outbox (want the one refund), stderr %s", code, len(entries), stderr)
	}
}

// TestTestScriptAnswersEachCase: a route step is answered by the folder's
// script, read afresh for each case, so its one reply answers every run;
// without a script the route step's cases fail, saying what to add.
func TestTestScriptAnswersEachCase(t *testing.T) {
	t.Parallel()
	path := writeFlow(t, `name: routed
inputs: {type: object, properties: {text: {type: string, enum: [a, b]}}, required: [text]}
steps:
  - id: triage
    type: route
    text: "{input.text}"
    model: router
    routes:
      - {name: one, description: the first}
      - {name: two, description: the second}
`)
	dir := filepath.Dir(path)
	code, out, stderr := cli(t, "test", dir)
	if code != exitRunFailed || !strings.Contains(out, "rein test answers llm steps only; step triage asks for a route decision: give a script") {
		t.Fatalf("without a script: exit %d, out %s, stderr %s", code, out, stderr)
	}
	script := "replies:\n  - {step: triage, decision: route, route: one, reason: always one}\n"
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = cli(t, "test", dir)
	if code != exitOK || !strings.Contains(out, "7 cases: 7 ok, 0 unexpected, 0 skipped") {
		t.Errorf("exit %d, out %s, stderr %s", code, out, stderr)
	}
}

// TestTestAgentFolder: an agent folder loads as rein run loads it; the
// workflow tool its agent declares (effect write) is stubbed, its tasks
// kept in the throwaway store.
func TestTestAgentFolder(t *testing.T) {
	t.Parallel()
	code, out, stderr := cli(t, "test", "../../examples/process-clerk", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s\n%s", code, stderr, out)
	}
	var rep testReportJSON
	decodeOne(t, out, &rep)
	if strings.Join(rep.Stubbed, ",") != "process_workflow" || rep.Summary[resultOK] != len(rep.Cases) || len(rep.Cases) == 0 {
		t.Errorf("stubbed %v, summary %v of %d cases", rep.Stubbed, rep.Summary, len(rep.Cases))
	}
}
