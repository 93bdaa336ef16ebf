package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cli runs the CLI in-process.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

type runJSON struct {
	Status  string                    `json:"status"`
	Outputs map[string]any            `json:"outputs"`
	Steps   map[string]map[string]any `json:"steps"`
	Error   *struct{ Class, Step, Message string }
}

func runExample(t *testing.T, name string, args ...string) runJSON {
	t.Helper()
	code, out, stderr := cli(t, append([]string{"run", "../../examples/" + name, "--output", "json"}, args...)...)
	var res runJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s\nstderr: %s", err, out, stderr)
	}
	if code != exitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr)
	}
	if !strings.Contains(stderr, "step_settled") {
		t.Fatalf("no progress lines on stderr: %s", stderr)
	}
	return res
}

func wantSteps(t *testing.T, res runJSON, want map[string][2]any) {
	t.Helper()
	for id, w := range want {
		st := res.Steps[id]
		if st["status"] != w[0] || st["attempts"] != w[1] {
			t.Errorf("step %s = %v, want status %v attempts %v", id, st, w[0], w[1])
		}
	}
}

func TestRunExamples(t *testing.T) {
	t.Setenv("REIN_OUTBOX", t.TempDir())
	res := runExample(t, "resume-screen")
	wantSteps(t, res, map[string][2]any{
		"extract_info": {"succeeded", 1.0}, "score_candidate": {"succeeded", 1.0}, "notify_result": {"succeeded", 1.0}})
	if res.Outputs["score_candidate"].(map[string]any)["score"] != 82.0 {
		t.Errorf("score %v", res.Outputs["score_candidate"])
	}

	res = runExample(t, "weather-brief")
	if got := res.Outputs["brief"].(map[string]any)["brief"]; got != "Tokyo: 18.0°C / 64.4°F, cloudy." {
		t.Errorf("brief = %q", got)
	}

	res = runExample(t, "flaky-tool")
	wantSteps(t, res, map[string][2]any{
		"quote": {"succeeded", 3.0}, "news": {"defaulted", 1.0}, "rating": {"fell_back", 1.0}, "report": {"succeeded", 1.0}})
}

func TestRunInvalidFlowRunsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	flow := `name: bad
tools:
  touch: {command: ["sh", "-c", "touch ` + marker + `; echo {}"], effect: write}
steps:
  - {id: a, tool: touch, retires: 2}
  - {id: b, tool: touch, args: {x: "{c.y}"}}
  - {id: c, tool: touch}
`
	path := filepath.Join(dir, "flow.yaml")
	if err := os.WriteFile(path, []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := cli(t, "run", path, "--trace", filepath.Join(dir, "t.jsonl"))
	if code != exitUsage {
		t.Fatalf("exit %d, want 2; stderr: %s", code, stderr)
	}
	for _, want := range []string{"flow.yaml:5:26: step a: unknown field \"retires\"", `did you mean "retries"`, "step b: args/x: {c.y} names step c, which is not upstream"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, f := range []string{marker, filepath.Join(dir, "t.jsonl")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s exists: an invalid flow must run and write nothing", f)
		}
	}
	code, _, stderr = cli(t, "validate", path)
	if code != exitUsage || !strings.Contains(stderr, "retires") {
		t.Fatalf("validate: exit %d, %s", code, stderr)
	}
}

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	failing := write("fail.yaml", "name: f\ntools:\n  no: {command: [\"sh\", \"-c\", \"echo nope >&2; exit 3\"], effect: none}\nsteps:\n  - {id: a, tool: no, args: {}}\n")
	code, out, _ := cli(t, "run", failing, "--output", "json")
	var res runJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != exitRunFailed || res.Status != "failed" ||
		res.Error == nil || !strings.Contains(res.Error.Message, "nope") {
		t.Fatalf("failing run: exit %d, %s", code, out)
	}
	typed := write("typed.yaml", "name: t\ninputs: {type: object, properties: {n: {type: number}}, required: [n]}\ntools:\n  e: {command: [cat], effect: none}\nsteps:\n  - {id: a, tool: e, args: {n: \"{n}\"}}\n")
	if code, _, stderr := cli(t, "run", typed, "--input-json", `{"n": "x"}`); code != exitUsage || !strings.Contains(stderr, "/n") {
		t.Fatalf("bad input: exit %d, %s", code, stderr)
	}
	if code, _, _ := cli(t, "run", typed, "--input-json", `{"n": `); code != exitUsage {
		t.Fatalf("input not JSON: exit %d", code)
	}
	if code, _, _ := cli(t, "run", typed, "--input-json", `{"n": 2}`); code != exitOK {
		t.Fatalf("good input: exit %d", code)
	}
	if code, _, _ := cli(t, "frobnicate"); code != exitUsage {
		t.Fatalf("unknown command: exit %d", code)
	}
	if code, _, _ := cli(t, "run", typed, "--bogus"); code != exitUsage {
		t.Fatalf("unknown flag: exit %d", code)
	}
}

func TestTraceGraphSchemaVersion(t *testing.T) {
	t.Setenv("REIN_OUTBOX", t.TempDir())
	tr := filepath.Join(t.TempDir(), "run.jsonl")
	if code, _, stderr := cli(t, "run", "../../examples/flaky-tool", "--trace", tr); code != exitOK {
		t.Fatalf("run: %d %s", code, stderr)
	}
	code, out, _ := cli(t, "trace", tr)
	if code != exitOK || !strings.Contains(out, "quote") || !strings.Contains(out, "transient") {
		t.Fatalf("trace summary: %d\n%s", code, out)
	}
	code, out, _ = cli(t, "trace", tr, "--output", "json")
	if code != exitOK || !json.Valid([]byte(out)) {
		t.Fatalf("trace json: %d %s", code, out)
	}
	for _, format := range []string{"mermaid", "dot"} {
		code, out, _ = cli(t, "graph", "../../examples/resume-screen", "--format", format)
		if code != exitOK || !strings.Contains(out, "score_candidate") {
			t.Fatalf("graph %s: %d %s", format, code, out)
		}
	}
	if code, _, _ = cli(t, "graph", "../../examples/resume-screen", "--format", "svg"); code != exitUsage {
		t.Fatalf("bad format: exit %d", code)
	}
	code, out, _ = cli(t, "schema")
	if code != exitOK || !json.Valid([]byte(out)) {
		t.Fatal("schema is not JSON")
	}
	if code, out, _ = cli(t, "version"); code != exitOK || !strings.HasPrefix(out, "rein ") {
		t.Fatalf("version: %q", out)
	}
	code, out, _ = cli(t, "validate", "../../examples/resume-screen", "../../examples/weather-brief", "--output", "json")
	if code != exitOK || !json.Valid([]byte(out)) {
		t.Fatalf("validate json: %d %s", code, out)
	}
}
