package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/store/sqlite"
)

// The secrets TestNoRecordHoldsASecret plants, each of a kind the
// redactor learns differently. Their characters change under every
// encoding the redactor covers (/ + = & < are %-escaped, & < are
// JSON-escaped with HTML escapes on).
const (
	plantedKey   = "Api/Key+Planted=0123456789" // REDEV_API_KEY: a name that says key
	plantedLogin = "Login&Planted<0123456789"   // MAILER_LOGIN: named by rein.yaml secrets:
	plantedDSNPw = "Dsn+Planted/Pw0123456789"   // the password of DATABASE_URL
)

// plantedForms are the forms of each secret the redactor hides: folded
// ones are compared in any letter case, base64 ones exactly.
func plantedForms() (folded, exact []string) {
	for _, s := range []string{plantedKey, plantedLogin, plantedDSNPw} {
		var html, plain strings.Builder
		_ = json.NewEncoder(&html).Encode(s)
		enc := json.NewEncoder(&plain)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		folded = append(folded, strings.ToLower(s), strings.ToLower(url.QueryEscape(s)), strings.ToLower(url.PathEscape(s)),
			strings.ToLower(strings.Trim(strings.TrimSpace(html.String()), `"`)), strings.ToLower(strings.Trim(strings.TrimSpace(plain.String()), `"`)))
		b := []byte(s)
		exact = append(exact, base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
			base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b))
	}
	return folded, exact
}

// secretRecord is one way a secret reaches what rein records.
type secretRecord struct {
	name string
	// flow is flow.yaml's text and script script.yaml's (may be empty).
	flow, script string
	// input is the run's input.
	input string
	// exit is rein run's exit code.
	exit int
	// kinds are the journal's event kinds the run must hold (so the row
	// proves the record it plants into was written).
	kinds []string
	// why names a step for rein runs why.
	why string
	// submit drives the flow as a workflow tool (rein tool start, then a
	// submit of what input holds) instead of rein run.
	submit bool
	// then are commands run after it (RUN stands for the run's id), each
	// with --db.
	then [][]string
}

// The tools of every row: fetch returns the rein.yaml secret it was passed
// (a tool output) and the args it was given; echo (an effect: a write, so
// that it is gated and its effect journaled) returns its args; fail
// prints its args on stderr and fails (an error message).
const secretConfig = `secrets: [MAILER_LOGIN]
tools:
  fetch:
    command: ["sh", "-c", "read -r args; printf '{\"login\": \"%s\", \"args\": %s}' \"$MAILER_LOGIN\" \"$args\""]
    effect: read
    pass_env: [MAILER_LOGIN]
  echo:
    command: ["sh", "-c", "read -r args; printf '{\"echoed\": %s}' \"$args\""]
    effect: write
  fail:
    command: ["sh", "-c", "read -r args; echo \"refused: $args\" >&2; exit 2"]
    effect: none
  save:
    command: ["sh", "-c", "read -r args; printf '{\"id\": \"%s\", \"saved\": %s}' \"$MAILER_LOGIN\" \"$args\""]
    effect: write
    pass_env: [MAILER_LOGIN]
    reversibility: compensatable
    compensate: {tool: unsave, args: {id: "{output.id}", why: "{args.token}"}}
  unsave:
    command: ["sh", "-c", "read -r args; echo \"cannot unsave: $args\" >&2; exit 2"]
    effect: write
`

// gated is what a flow needs to journal the gate's decisions, risk tiers
// and reviews: risk tier 3 has side-effect calls reviewed by model rev.
const gated = "risk: {min_tier: 3}\nreview: {model: rev}\n"

var secretRecords = []secretRecord{
	{name: "tool args, a tool's output, an error message, an approval's args",
		flow: `name: tools
inputs: {type: object}
steps:
  - {id: fetch, tool: fetch, args: {token: "{input.token}"}}
  - {id: fail, tool: fail, args: {login: "{fetch.login}", dsn: "{input.dsn}"}, retries: 0, on_error: skip, fallback_value: {}}
  - {id: send, tool: echo, args: {to: "{fetch.login}", token: "{input.token}"}, approval: required}
`,
		input: `{"token": "` + plantedKey + `", "dsn": "` + plantedDSNPw + `"}`, exit: exitWaiting,
		kinds: []string{"step_settled", "attempt_failed", "approval_requested", "step_settled"}, why: "send",
		then: [][]string{{"runs", "reject", "RUN", "send", "--comment", "not with " + plantedKey + " for " + plantedLogin}}},
	{name: "a model's reply",
		flow: `name: llm
inputs: {type: object}
steps:
  - {id: write, type: llm, model: m, prompt_template: "write a note", output_schema: {type: object, properties: {note: {type: string}}}}
  - {id: save, tool: echo, args: {note: "{write.note}"}}
`,
		script: "replies:\n  - {step: write, output: {note: \"use " + plantedDSNPw + " and " + plantedKey + "\"}}\n",
		input:  `{}`, exit: exitOK, kinds: []string{"step_settled"}},
	{name: "an agent's tool-call args, observations and answer, the gate, risk and review",
		flow: `name: agentic
inputs: {type: object}
` + gated + `steps:
  - id: s
    type: agent
    model: m
    instructions: Save what you are told.
    prompt_template: "save {input.token}"
    execute_plan: false # a direct call, reviewed (with execute_plan, tier 3 makes the agent plan)
    tools: {echo: , fetch: }
`,
		script: "replies:\n" +
			"  - {step: s, decision: agent, turn: 1, tool_calls: [{name: fetch, args: {q: \"" + plantedKey + "\"}}]}\n" +
			"  - {step: s, decision: agent, turn: 2, tool_calls: [{name: echo, args: {login: \"" + plantedLogin + "\", key: \"" + plantedKey + "\"}}]}\n" +
			"  - {step: s, decision: review, output: {verdicts: [{claim: \"the login is " + plantedLogin + "\", supported: true, evidence: \"fetch said " + plantedLogin + "\"}]}}\n" +
			"  - {step: s, decision: agent, turn: 3, raw: \"saved " + plantedLogin + " with " + plantedKey + "\"}\n",
		input: `{"token": "` + plantedKey + `"}`, exit: exitWaiting,
		kinds: []string{"agent_turn", "call", "risk_tier", "review", "approval_requested"}, why: "s"},
	{name: "a plan's args",
		flow: `name: planned
inputs: {type: object}
steps:
  - {id: p, type: plan, model: m, goal: "save it", tools: [echo], max_replans: 0}
`,
		script: "replies:\n  - {step: p, decision: plan, plan: {goal: \"save " + plantedKey + "\", steps: [{id: a, tool: echo, args: {key: \"" + plantedKey + "\", login: \"" + plantedLogin + "\"}}]}}\n",
		input:  `{}`, exit: exitOK, kinds: []string{"plan_proposed", "plan_step_settled"}, why: "p"},
	{name: "a saga's compensation of a call whose args and output hold secrets",
		flow: `name: saga
inputs: {type: object}
on_failure: compensate
steps:
  - {id: save, tool: save, args: {token: "{input.token}"}}
  - {id: fail, tool: fail, args: {id: "{save.id}"}, retries: 0}
`,
		input: `{"token": "` + plantedKey + `"}`, exit: exitWaiting, kinds: []string{"call", "remediation"}, why: "save"},
	{name: "a rejected submission", flow: secretSubmission, submit: true, exit: exitUsage,
		input: `{"n": 1, "token": "` + plantedKey + `", "login": "` + plantedLogin + `"}`, kinds: []string{"submission_rejected"}},
}

// secretSubmission is a workflow whose submit step rejects what an agent
// submits (the secret in a field the contract does not allow).
const secretSubmission = `name: submitted
inputs: {type: object}
steps:
  - {id: parse, skill: parse, output_schema: {type: object, properties: {n: {type: integer}}, required: [n], additionalProperties: false}}
`

// TestNoRecordHoldsASecret plants secrets (an API key from the
// environment, a value rein.yaml secrets: names, a DSN's password) into
// tool args, tool outputs, a model's replies, an agent's tool calls, a
// plan's args and an error message, runs flows that journal every kind
// of record on SQLite, and finds none of the secrets, in any encoding the
// redactor covers, in the database file's bytes, the JSONL trace, or what
// rein run, runs show, runs trace, runs effects and runs why print.
func TestNoRecordHoldsASecret(t *testing.T) {
	// Not parallel: it sets environment variables.
	t.Setenv("REDEV_API_KEY", plantedKey)
	t.Setenv("MAILER_LOGIN", plantedLogin)
	t.Setenv("DATABASE_URL", "postgres://rein:"+url.PathEscape(plantedDSNPw)+"@db.example/rein")
	folded, exact := plantedForms()
	for _, rec := range secretRecords {
		t.Run(rec.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"rein.yaml": secretConfig, "flow.yaml": rec.flow, "script.yaml": rec.script}
			for name, text := range files {
				if text == "" {
					continue
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			db, tracePath := filepath.Join(dir, "rein.db"), filepath.Join(dir, "trace.jsonl")
			places := map[string]string{}
			runID := rec.drive(t, dir, db, tracePath, places)
			for _, args := range rec.then {
				args = slices.Clone(args)
				args[slices.Index(args, "RUN")] = runID
				code, o, e := cli(t, append(args, "--db", db)...)
				if code == exitUsage {
					t.Fatalf("rein %v: exit %d\n%s%s", args, code, o, e)
				}
				places["rein "+args[0]+" "+args[1]] = o + e
			}
			for _, args := range [][]string{{"runs", "show", runID}, {"runs", "show", runID, "--output", "json"}, {"runs", "trace", runID},
				{"runs", "effects", runID}, {"runs", "effects", runID, "--output", "json"}, {"runs", "why", runID, rec.why}} {
				if args[len(args)-1] == "" {
					continue
				}
				_, o, e := cli(t, append(args, "--db", db)...)
				places[strings.Join(append(args[:2:2], args[3:]...), " ")] = o + e
			}
			kinds := recordedKinds(t, db, runID)
			for _, kind := range rec.kinds {
				if !kinds[kind] {
					t.Errorf("the journal holds no %s event (it holds %v): the row does not plant what it says", kind, kinds)
				}
			}
			for _, f := range []string{tracePath, db, db + "-wal", db + "-shm"} {
				b, err := os.ReadFile(f)
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				places[filepath.Base(f)] = string(b)
			}
			if !strings.Contains(places["rein.db"]+places["rein.db-wal"], "[REDACTED]") {
				t.Error("the database holds no [REDACTED]: the secrets did not reach what is recorded")
			}
			for where, text := range places {
				low := strings.ToLower(text)
				for _, form := range folded {
					if strings.Contains(low, form) {
						t.Errorf("%s holds a secret (as %q)", where, form)
					}
				}
				for _, form := range exact {
					if strings.Contains(text, form) {
						t.Errorf("%s holds a secret (base64 %q)", where, form)
					}
				}
			}
		})
	}
}

// drive runs the row's flow in dir with database db, adds what rein
// printed to places, and returns the run's id.
func (rec *secretRecord) drive(t *testing.T, dir, db, tracePath string, places map[string]string) string {
	t.Helper()
	if !rec.submit {
		code, out, stderr := cli(t, "run", dir, "--db", db, "--trace", tracePath, "--input-json", rec.input, "--output", "json")
		if code != rec.exit {
			t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, rec.exit, out, stderr)
		}
		places["rein run stdout"], places["rein run stderr"] = out, stderr
		var res durableResult
		decodeOne(t, out, &res)
		return res.RunID
	}
	code, out, stderr := cli(t, "tool", dir, "start", "--input-json", "{}", "--db", db)
	var started struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal([]byte(out), &started); err != nil || started.TaskID == "" {
		t.Fatalf("start: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	code, out, stderr = cli(t, "tool", dir, "submit", "--task", started.TaskID, "--step", "parse", "--data", rec.input, "--db", db)
	if code != rec.exit {
		t.Fatalf("submit: exit %d, want %d\nstdout: %s\nstderr: %s", code, rec.exit, out, stderr)
	}
	places["rein tool submit stdout"], places["rein tool submit stderr"] = out, stderr
	return started.TaskID
}

// recordedKinds are the kinds of the events run runID journaled in db.
func recordedKinds(t *testing.T, db, runID string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.Events(ctx, runID, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, ev := range evs {
		kinds[string(ev.Kind)] = true
	}
	return kinds
}
