package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A step whose output contradicts its premise stops the run first: the
// step waits for a person (exit 3) with a message naming the premise and
// the remediation on offer, nothing that depends on it runs — even with
// on_error: retry it is not retried — and rein runs impact answers for it.
func TestPremiseStopsFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	saved := filepath.Join(dir, "saved.json")
	flowText := `name: premised
tools:
  lookup:
    command: ["sh", "-c", "cat >/dev/null; echo x >> ` + filepath.Join(dir, "lookups") + `; echo '{\"region\": \"\"}'"]
    effect: read
  save:
    command: ["sh", "-c", "cat > ` + saved + `; echo '{\"ok\": true}'"]
    effect: write
steps:
  - id: lookup
    tool: lookup
    args: {}
    retries: 2
    on_error: retry
    premise: {id: region-known, claim: "the registry knows the customer's region", check: 'output.region != ""'}
  - {id: save, tool: save, args: {region: "{lookup.region}"}}
`
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(flowText), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "rein.db")
	code, out, stderr := cli(t, "run", dir, "--db", db, "--output", "json")
	if code != exitWaiting {
		t.Fatalf("exit %d, want 3\n%s%s", code, out, stderr)
	}
	var res durableResult
	decodeOne(t, out, &res)
	if _, err := os.Stat(saved); !os.IsNotExist(err) {
		t.Errorf("save ran after the premise failed (%v)", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "lookups")); strings.Count(string(b), "x") != 1 {
		t.Errorf("lookup ran %d times, want once: a failed premise is not retried", strings.Count(string(b), "x"))
	}
	code, out, stderr = cli(t, "runs", "show", res.RunID, "--db", db)
	for _, want := range []string{"premise region-known (\"the registry knows the customer's region\") does not hold on the output of step lookup",
		"rein runs impact " + res.RunID + " --premise lookup", "rein runs remediate " + res.RunID + " --premise lookup"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("runs show does not say %q (exit %d):\n%s%s", want, code, out, stderr)
		}
	}
	if code, out, stderr = cli(t, "runs", "impact", res.RunID, "--premise", "lookup", "--db", db); code != exitOK || !strings.Contains(out, "lookup") {
		t.Errorf("runs impact: exit %d\n%s%s", code, out, stderr)
	}
}

// premiseFlow writes, in dir, a flow whose step lookup's output
// contradicts a premise — the step's own (premise: on the step), or its
// tool's (premise: on the tool's declaration) — beside an independent
// branch whose write tool (audit) has nothing to do with it. The flow runs
// one step at a time, so that the branch is not in flight when the
// premise fails. Each tool appends its name to dir/calls.
func premiseFlow(t *testing.T, dir string, toolPremise bool) {
	t.Helper()
	calls := filepath.Join(dir, "calls")
	stepPremise, declPremise := `
    premise: {id: region-known, claim: "the registry knows the customer's region", check: 'output.region != ""'}`, ""
	if toolPremise {
		stepPremise, declPremise = "", `
    premise: {id: region-known, claim: "the registry knows the customer's region", check: 'output.region != "" && args.customer != ""'}`
	}
	flowText := `name: premised
concurrency: 1
tools:
  lookup:
    command: ["sh", "-c", "cat >/dev/null; echo lookup >> ` + calls + `; echo '{\"region\": \"\"}'"]
    effect: read` + declPremise + `
  save:
    command: ["sh", "-c", "cat >/dev/null; echo save >> ` + calls + `; echo '{\"ok\": true}'"]
    effect: write
  audit:
    command: ["sh", "-c", "cat >/dev/null; echo audit >> ` + calls + `; echo '{\"ok\": true}'"]
    effect: write
steps:
  - id: lookup
    tool: lookup
    args: {customer: bob}` + stepPremise + `
  - {id: save, tool: save, args: {region: "{lookup.region}"}}
  - {id: audit, tool: audit, args: {}, requires: []}
`
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(flowText), 0o644); err != nil {
		t.Fatal(err)
	}
}

// madeCalls lists the tools the flow of premiseFlow called, in order.
func madeCalls(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "calls"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(b)), ",")
}

// A failed premise pauses the WHOLE run before any further effect: the
// independent branch's write tool is not called (it is, on a run where
// only what depends on the premise waits), the run waits with the premise
// named (kind premise), a resume without a decision stays paused and
// calls nothing, and once a person settles the step the paused branches go
// on. The same holds for a tool declaration's premise, checked on the
// call's output.
func TestPremisePausesTheWholeRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		toolPremise bool
		on          string
	}{
		{"step premise", false, "does not hold on the output of step lookup"},
		{"tool premise", true, "does not hold on the output of a call of tool lookup by step lookup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			premiseFlow(t, dir, tc.toolPremise)
			db := filepath.Join(dir, "rein.db")
			code, out, stderr := cli(t, "run", dir, "--db", db, "--output", "json")
			if code != exitWaiting {
				t.Fatalf("exit %d, want 3\n%s%s", code, out, stderr)
			}
			var res durableResult
			decodeOne(t, out, &res)
			if got := madeCalls(t, dir); got != "lookup" {
				t.Fatalf("calls %q after the premise failed, want only lookup: the independent audit must not run", got)
			}
			if len(res.Pending) != 1 || res.Pending[0].StepID != "lookup" || res.Pending[0].Kind != "premise" {
				t.Fatalf("pending %+v, want lookup waiting on its premise", res.Pending)
			}
			code, out, stderr = cli(t, "runs", "show", res.RunID, "--db", db)
			for _, want := range []string{"step lookup (premise)", "premise region-known (\"the registry knows the customer's region\") " + tc.on,
				"the run is paused here, before any further effect", "rein runs impact " + res.RunID + " --premise lookup",
				"rein runs remediate " + res.RunID + " --premise lookup"} {
				if code != exitOK || !strings.Contains(out, want) {
					t.Errorf("runs show does not say %q (exit %d):\n%s%s", want, code, out, stderr)
				}
			}
			code, out, stderr = cli(t, "runs", "why", res.RunID, "lookup", "--db", db)
			if want := "paused by a failed premise at attempt 1: premise region-known"; code != exitOK || !strings.Contains(out, want) {
				t.Errorf("runs why does not say %q (exit %d):\n%s%s", want, code, out, stderr)
			}
			if !tc.toolPremise {
				// the step's premise is named by its id as well as by its step's.
				code, out, stderr = cli(t, "runs", "impact", res.RunID, "--premise", "region-known", "--db", db)
				if code != exitOK || !strings.Contains(out, "premise region-known (step) of run "+res.RunID+" affects steps: lookup, save") {
					t.Errorf("runs impact --premise region-known: exit %d\n%s%s", code, out, stderr)
				}
			}
			// a resume without a decision stays paused and calls nothing.
			if code, out, stderr = cli(t, "runs", "resume", res.RunID, "--db", db); code != exitWaiting {
				t.Fatalf("resume without a decision: exit %d, want 3\n%s%s", code, out, stderr)
			}
			if got := madeCalls(t, dir); got != "lookup" {
				t.Fatalf("calls %q after a resume without a decision, want only lookup", got)
			}
			// a person corrects the output: the paused branches go on.
			if code, out, stderr = cli(t, "runs", "settle", res.RunID, "lookup", "--value", `{"region": "us-east"}`, "--db", db); code != exitOK {
				t.Fatalf("settle: exit %d\n%s%s", code, out, stderr)
			}
			if got := strings.Split(madeCalls(t, dir), ","); len(got) != 3 || !slices.Contains(got, "save") || !slices.Contains(got, "audit") {
				t.Fatalf("calls %q after the settle, want lookup, then save and audit once each", got)
			}
		})
	}
}

// A tool's premise holds in an agent loop too: the call whose output
// contradicts it is made (and recorded), but the loop makes no further
// call of the turn — the refund the model chose beside it is not sent —
// and takes no further turn; the run waits on the agent step, the premise
// named, and nothing else runs.
func TestToolPremiseStopsTheAgentLoop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	files := map[string]string{
		"rein.yaml": `tools:
  lookup_order:
    command: ["sh", "-c", "cat >/dev/null; echo lookup >> ` + calls + `; echo '{\"order\": \"1042\", \"currency\": \"\"}'"]
    effect: read
    premise: {id: currency-known, claim: "every order has a currency", check: 'output.currency != ""'}
  issue_refund:
    command: ["sh", "-c", "cat >/dev/null; echo refund >> ` + calls + `; echo '{\"refunded\": true}'"]
    effect: write
`,
		"agent.yaml": `name: support
model: support-model
instructions: Refund duplicate charges.
concurrency: 1
tools:
  lookup_order:
  issue_refund:
`,
		"script.yaml": `replies:
  - step: agent
    decision: agent
    turn: 1
    tool_calls:
      - {name: lookup_order, args: {order: "1042"}}
      - {name: issue_refund, args: {order: "1042"}}
  - step: agent
    decision: agent
    turn: 2
    tool_calls:
      - {name: issue_refund, args: {order: "1042"}}
  - step: agent
    decision: agent
    turn: 3
    raw: "done"
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(dir, "rein.db")
	code, out, stderr := cli(t, "agent", dir, "refund order 1042", "--db", db, "--output", "json")
	if code != exitWaiting {
		t.Fatalf("exit %d, want 3 (waiting)\n%s%s", code, out, stderr)
	}
	if got := madeCalls(t, dir); got != "lookup" {
		t.Fatalf("calls %q, want only lookup: after its premise failed no further call of the turn, and no further turn, may run", got)
	}
	var res agentResultJSON
	decodeOne(t, out, &res)
	if len(res.Pending) != 1 || res.Pending[0]["kind"] != "premise" || res.Pending[0]["step_id"] != "agent" {
		t.Fatalf("pending %v, want the agent step waiting on its premise", res.Pending)
	}
	code, out, stderr = cli(t, "runs", "show", res.RunID, "--db", db)
	for _, want := range []string{"premise currency-known (\"every order has a currency\") does not hold on the output of a call of tool lookup_order by step agent",
		"rein runs impact " + res.RunID + " --premise agent"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("runs show does not say %q (exit %d):\n%s%s", want, code, out, stderr)
		}
	}
	// a resume without a decision stays paused: the loop does not go on
	// from its transcript (the refund it chose is still not made).
	if code, out, stderr = cli(t, "runs", "resume", res.RunID, "--db", db); code != exitWaiting {
		t.Fatalf("resume without a decision: exit %d, want 3\n%s%s", code, out, stderr)
	}
	if got := madeCalls(t, dir); got != "lookup" {
		t.Fatalf("calls %q after a resume without a decision, want only lookup", got)
	}
	code, out, stderr = cli(t, "runs", "why", res.RunID, "agent", "--db", db)
	for _, want := range []string{"agent attempt=1 (business): agent: call turn1/call1: premise currency-known", "paused by a failed premise at attempt 1: premise currency-known"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("runs why does not say %q (exit %d):\n%s%s", want, code, out, stderr)
		}
	}
	// a person gives the step its answer: the run goes on without the loop.
	if code, out, stderr = cli(t, "runs", "settle", res.RunID, "agent", "--value", `"order 1042 has no currency: not refunded"`, "--db", db); code != exitOK {
		t.Fatalf("settle: exit %d\n%s%s", code, out, stderr)
	}
	if got := madeCalls(t, dir); got != "lookup" {
		t.Fatalf("calls %q after the settle, want only lookup", got)
	}
}
