package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateChecksToolStepArgs: rein validate checks a tool step's args
// (and a fallback tool's) against the tool's input_schema, as it checks a
// plan's: a missing required field, a field the schema does not allow, a
// literal of the wrong type, and text with placeholders (always a string)
// where the schema wants a number, each located at the arg. A placeholder
// alone is left to the call; a run of such a flow writes nothing.
func TestValidateChecksToolStepArgs(t *testing.T) {
	t.Parallel()
	path := writeFlow(t, `name: args
tools:
  charge:
    command: ["sh", "-c", "cat >/dev/null; echo '{}'"]
    effect: none
    input_schema:
      type: object
      properties:
        order: {type: string}
        amount: {type: number}
        note: {type: string}
      required: [order, amount]
      additionalProperties: false
steps:
  - {id: ok, tool: charge, args: {order: "A-{input.n}", amount: "{input.n}"}}
  - {id: lacks, tool: charge, args: {amount: 3}}
  - {id: extra, tool: charge, args: {order: "A", amount: 3, amout: 4}}
  - id: typed
    tool: charge
    args: {order: "A", amount: "three"}
  - id: text
    tool: charge
    args: {order: "A", amount: "{input.n} EUR"}
    on_error: fallback
    fallback: {tool: charge, args: {order: 7, amount: 1}}
`)
	code, out, stderr := cli(t, "validate", path)
	if code != exitUsage {
		t.Fatalf("validate: exit %d, want 2\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{
		`flow.yaml:16:37: step lacks: args lack "order", which tool charge requires`,
		`flow.yaml:17:68: step extra: args have "amout", which tool charge's input does not allow (did you mean "amount"?)`,
		`flow.yaml:20:32: step typed: args "amount" does not fit tool charge's input`,
		`flow.yaml:23:32: step text: args "amount" is text with placeholders, so always a string, and tool charge's input wants number there`,
		`flow.yaml:25:44: step text: fallback.args "order" does not fit tool charge's input`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("validate: stderr lacks %s\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "step ok") {
		t.Errorf("validate: args that may fit are reported:\n%s", stderr)
	}
	db := filepath.Join(t.TempDir(), "rein.db")
	if code, _, stderr := cli(t, "run", path, "--db", db); code != exitUsage || !strings.Contains(stderr, "nothing ran") {
		t.Errorf("run: exit %d, want 2\n%s", code, stderr)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a flow that does not validate made the store (%v)", err)
	}
}

// TestValidateChecksReadTypes: a placeholder alone that reads a field
// whose type an upstream step's output_schema (or its tool's) declares is
// checked against the tool's input_schema too, located at the arg; an
// integer fits a number, and an undeclared field is left to the call.
func TestValidateChecksReadTypes(t *testing.T) {
	t.Parallel()
	path := writeFlow(t, `name: reads
tools:
  quote:
    command: ["sh", "-c", "cat >/dev/null; echo '{}'"]
    effect: none
    output_schema:
      type: object
      properties:
        total: {type: string}
        count: {type: integer}
        lines: {type: array, items: {type: object, properties: {sku: {type: number}}}}
  charge:
    command: ["sh", "-c", "cat >/dev/null; echo '{}'"]
    effect: none
    input_schema:
      type: object
      properties:
        order: {type: string}
        amount: {type: number}
steps:
  - {id: q, tool: quote, args: {}}
  - id: p
    tool: charge
    args: {}
    output_schema: {type: object, properties: {total: {type: boolean}, free: {}}}
  - {id: ok, tool: charge, args: {amount: "{q.count}", order: "{q.total}"}, requires: [q]}
  - {id: free, tool: charge, args: {amount: "{p.free}"}, requires: [p, q]}
  - {id: bad, tool: charge, args: {amount: "{q.total}"}, requires: [q]}
  - {id: worse, tool: charge, args: {amount: "{p.total}", order: "{q.lines[0].sku}"}, requires: [p, q]}
`)
	code, out, stderr := cli(t, "validate", path)
	if code != exitUsage {
		t.Fatalf("validate: exit %d, want 2\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{
		`flow.yaml:28:44: step bad: args "amount" reads {q.total}, which tool quote's output_schema declares as string, and tool charge's input wants number there`,
		`flow.yaml:29:46: step worse: args "amount" reads {p.total}, which step p's output_schema declares as boolean, and tool charge's input wants number there`,
		`flow.yaml:29:66: step worse: args "order" reads {q.lines[0].sku}, which tool quote's output_schema declares as number, and tool charge's input wants string there`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("validate: stderr lacks %s\n%s", want, stderr)
		}
	}
	for _, not := range []string{"step ok", "step free"} {
		if strings.Contains(stderr, not) {
			t.Errorf("validate: args that may fit are reported (%s):\n%s", not, stderr)
		}
	}
}

// TestRunChecksToolProgramsFirst: rein run and rein agent refuse, before a
// run exists, a flow whose step calls an exec tool whose program is not
// there (exit 2, located in the file that declares the tool, no store
// made), instead of failing it mid-run after the steps before it; a tool
// the flow never calls is not checked.
func TestRunChecksToolProgramsFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"flow.yaml": `name: missing
steps:
  - {id: first, tool: fine, args: {}}
  - {id: second, tool: gone, args: {}}
`,
		"rein.yaml": `tools:
  fine: {command: ["sh", "-c", "echo ran >> ran.log; echo '{}'"], effect: write}
  gone: {command: ["./bin/not-there"], effect: none}
  unused: {command: ["./bin/also-not-there"], effect: none}
`,
		"agent/agent.yaml":  "model: m\ninstructions: x\ntools:\n  gone:\n",
		"agent/rein.yaml":   "tools:\n  gone: {command: [\"./bin/not-there\"], effect: none}\n",
		"agent/script.yaml": "replies:\n  - {step: agent, decision: agent, raw: done}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"run", dir}, {"agent", filepath.Join(dir, "agent"), "do it"}} {
		db := filepath.Join(t.TempDir(), "rein.db")
		code, out, stderr := cli(t, append(args, "--db", db)...)
		if code != exitUsage || !strings.Contains(stderr, "rein.yaml:") || !strings.Contains(stderr, "not-there") ||
			strings.Contains(stderr, "also-not-there") || !strings.Contains(stderr, "nothing was written") {
			t.Errorf("%s: exit %d, want 2 naming the missing program where it is declared\n%s\n%s", args[0], code, out, stderr)
		}
		if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a refused run made the store (%v)", args[0], err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran.log")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a step ran before the missing program was noticed")
	}
}
