package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/flow"
)

// These tests complement main_test.go: the details of a run's JSON result,
// the progress lines, the trace summary, validate's messages, and tools that
// misbehave.

// writeFlow writes a flow file into a fresh temp dir and returns its path.
func writeFlow(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "flow.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// decodeOne decodes stdout as exactly one JSON object and nothing after it.
func decodeOne(t *testing.T, stdout string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value:\n%s", stdout)
	}
	if strings.TrimSpace(stdout[dec.InputOffset():]) != "" {
		t.Fatalf("text after the JSON result:\n%s", stdout)
	}
}

func TestRunWeatherBriefResult(t *testing.T) {
	t.Parallel()
	code, out, stderr := cli(t, "run", "../../examples/weather-brief", "--output", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr)
	}
	var res struct {
		RunID   string                    `json:"run_id"`
		Flow    string                    `json:"flow"`
		Status  string                    `json:"status"`
		Outputs map[string]map[string]any `json:"outputs"`
		Steps   map[string]struct {
			Status   string `json:"status"`
			Attempts int    `json:"attempts"`
		} `json:"steps"`
		Error any `json:"error"`
	}
	decodeOne(t, out, &res)
	if res.Status != "succeeded" || res.Flow != "weather_brief" || res.RunID == "" || res.Error != nil {
		t.Errorf("result = %+v", res)
	}
	if len(res.Steps) != 3 {
		t.Errorf("steps = %v, want 3", res.Steps)
	}
	for id, st := range res.Steps {
		if st.Status != "succeeded" || st.Attempts != 1 {
			t.Errorf("step %s = %+v, want succeeded after 1 attempt", id, st)
		}
	}
	if got := res.Outputs["brief"]["brief"]; got != "Tokyo: 18.0°C / 64.4°F, cloudy." {
		t.Errorf("brief = %q", got)
	}
}

func TestRunWeatherBriefInputsSchema(t *testing.T) {
	t.Parallel()
	// inputs: requires city; nothing runs, so there are no progress lines,
	// and stdout holds the one error envelope (-o json).
	code, out, stderr := cli(t, "run", "../../examples/weather-brief", "--input-json", `{"town": "Tokyo"}`, "--output", "json")
	var env struct {
		Error struct {
			Class, Message string
			Retryable      bool
		}
	}
	if code != exitUsage || json.Unmarshal([]byte(out), &env) != nil || env.Error.Class != "business" || env.Error.Retryable ||
		!strings.Contains(env.Error.Message, "missing property 'city'") {
		t.Fatalf("exit %d, stdout %q, want 2 and the error envelope", code, out)
	}
	if !strings.Contains(stderr, "city") || !strings.Contains(stderr, "nothing ran") || strings.Contains(stderr, "step_started") {
		t.Errorf("stderr: %s", stderr)
	}
}

// TestProgressOneLinePerEvent checks that, off a terminal, stderr holds one
// line per trace event (the JSONL trace of the same run is the reference)
// and no escape codes.
func TestProgressOneLinePerEvent(t *testing.T) {
	t.Parallel()
	tr := filepath.Join(t.TempDir(), "run.jsonl")
	code, _, stderr := cli(t, "run", "../../examples/flaky-tool", "--trace", tr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "\x1b[") {
		t.Errorf("escape codes on a non-terminal stderr:\n%q", stderr)
	}
	data, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		var e struct {
			Kind   string `json:"kind"`
			StepID string `json:"step_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("trace line is not JSON: %v: %s", err, sc.Text())
		}
		kinds = append(kinds, e.Kind)
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if len(lines) != len(kinds) {
		t.Fatalf("%d progress lines for %d events:\n%s", len(lines), len(kinds), stderr)
	}
	line := regexp.MustCompile(`^\s*\d+\.\d{3}s (\S+)`)
	for i, l := range lines {
		m := line.FindStringSubmatch(l)
		if m == nil || m[1] != kinds[i] {
			t.Errorf("line %d = %q, want event %s", i+1, l, kinds[i])
		}
	}
	for _, step := range []string{"quote", "news", "rating", "report"} {
		for _, kind := range []string{"step_started", "step_settled"} {
			if !regexp.MustCompile(`(?m)^\s*\S+ ` + kind + ` +` + step + ` `).MatchString(stderr) {
				t.Errorf("no %s line for %s:\n%s", kind, step, stderr)
			}
		}
	}
	if !strings.Contains(stderr, "attempt_failed quote failed attempt=1 [transient/tool]") {
		t.Errorf("no transient attempt_failed line for quote:\n%s", stderr)
	}
}

func TestTraceSummary(t *testing.T) {
	t.Setenv("REIN_OUTBOX", t.TempDir())
	dir := t.TempDir()
	flaky, resume := filepath.Join(dir, "flaky.jsonl"), filepath.Join(dir, "resume.jsonl")
	for path, example := range map[string]string{flaky: "flaky-tool", resume: "resume-screen"} {
		if code, _, stderr := cli(t, "run", "../../examples/"+example, "--trace", path); code != exitOK {
			t.Fatalf("run %s: exit %d: %s", example, code, stderr)
		}
	}

	code, out, _ := cli(t, "trace", flaky)
	if code != exitOK {
		t.Fatalf("trace: exit %d", code)
	}
	for _, re := range []string{
		`(?m)^run \S+ +flow flaky_tool +status succeeded`,
		`(?m)^slowest steps$`,
		`(?m)^  quote +tool +succeeded +\S+ +3$`,
		`(?m)^most tokens: no model calls$`,
		`(?m)^retried$`,
		`(?m)^  quote +2 +0 +transient, transient +succeeded$`,
		`(?m)^failures$`,
		`(?m)^  news +1 +tool +business +tool broken_news`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("flaky-tool summary lacks %s:\n%s", re, out)
		}
	}

	// resume-screen spends tokens, and its rejected reply is corrected
	// within the attempt: a correction, not a retry or a failure.
	code, out, _ = cli(t, "trace", resume)
	if code != exitOK {
		t.Fatalf("trace: exit %d", code)
	}
	for _, re := range []string{
		`(?m)^  tokens 276 in / 58 out in 3 model calls$`,
		`(?m)^most tokens$`,
		`(?m)^retried$`,
		`(?m)^  score_candidate +0 +1 +- +succeeded$`,
		`(?m)^failures: none$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("resume-screen summary lacks %s:\n%s", re, out)
		}
	}

	code, out, _ = cli(t, "trace", flaky, "--output", "json")
	if code != exitOK {
		t.Fatalf("trace json: exit %d", code)
	}
	var sum struct {
		Runs []struct {
			Flow   string `json:"flow"`
			Status string `json:"status"`
			Steps  []struct {
				StepID   string `json:"step_id"`
				Status   string `json:"status"`
				Attempts int    `json:"attempts"`
				Retries  int    `json:"retries"`
				Failure  *struct {
					Class, Origin string
				} `json:"failure"`
			} `json:"steps"`
		} `json:"runs"`
	}
	decodeOne(t, out, &sum)
	if len(sum.Runs) != 1 || sum.Runs[0].Flow != "flaky_tool" || sum.Runs[0].Status != "succeeded" {
		t.Fatalf("summary = %+v", sum)
	}
	found := false
	for _, s := range sum.Runs[0].Steps {
		if s.StepID == "quote" {
			found = true
			if s.Attempts != 3 || s.Retries != 2 || s.Failure == nil || s.Failure.Class != "transient" || s.Failure.Origin != "tool" {
				t.Errorf("quote = %+v", s)
			}
		}
	}
	if !found {
		t.Errorf("no quote step in %+v", sum.Runs[0].Steps)
	}

	if code, _, stderr := cli(t, "trace", filepath.Join(dir, "missing.jsonl")); code != exitUsage || stderr == "" {
		t.Errorf("missing trace file: exit %d, stderr %q", code, stderr)
	}
	if code, _, _ := cli(t, "trace", flaky, "--output", "yaml"); code != exitUsage {
		t.Errorf("bad --output: exit %d", code)
	}
}

const badFlow = `name: bad
steps:
  - {id: a, tool: nowhere, args: {}}
  - {id: a, tool: nowhere, args: {}, on_eror: skip}
`

func TestValidate(t *testing.T) {
	t.Parallel()
	bad := writeFlow(t, badFlow)
	located := regexp.MustCompile(`^` + regexp.QuoteMeta(bad) + `:\d+:\d+: `)

	code, out, stderr := cli(t, "validate", bad)
	if code != exitUsage || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("want at least 3 problems and a summary:\n%s", stderr)
	}
	for _, l := range lines[:len(lines)-1] {
		if !located.MatchString(l) {
			t.Errorf("not a file:line:col line: %q", l)
		}
	}
	for _, want := range []string{"nowhere", "duplicate", "on_eror"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if last := lines[len(lines)-1]; last != "rein: 1 of 1 flow did not validate" {
		t.Errorf("last line = %q", last)
	}

	// Several files: each good one is reported ok, every problem of the bad
	// one is listed, and the exit is 2.
	code, out, stderr = cli(t, "validate", "../../examples/weather-brief", bad, "../../examples/flaky-tool")
	if code != exitUsage {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"../../examples/weather-brief: ok (weather_brief, 3 steps)", "../../examples/flaky-tool: ok (flaky_tool, 4 steps)"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !located.MatchString(stderr) || !strings.Contains(stderr, "rein: 1 of 3 flows did not validate") {
		t.Errorf("stderr:\n%s", stderr)
	}

	code, out, _ = cli(t, "validate", "../../examples/weather-brief", bad, "--output", "json")
	if code != exitUsage {
		t.Fatalf("json: exit %d", code)
	}
	var results []struct {
		Path        string            `json:"path"`
		OK          bool              `json:"ok"`
		Diagnostics []flow.Diagnostic `json:"diagnostics"`
	}
	decodeOne(t, out, &results)
	if len(results) != 2 || !results[0].OK || results[1].OK || results[1].Path != bad {
		t.Fatalf("results = %+v", results)
	}
	if len(results[1].Diagnostics) < 3 {
		t.Errorf("diagnostics = %+v", results[1].Diagnostics)
	}
	for _, d := range results[1].Diagnostics {
		if d.File != bad || d.Line < 1 || d.Col < 1 || d.Message == "" {
			t.Errorf("diagnostic not located: %+v", d)
		}
	}

	if code, _, stderr := cli(t, "validate", filepath.Join(t.TempDir(), "none.yaml")); code != exitUsage || !strings.Contains(stderr, "none.yaml") {
		t.Errorf("missing file: exit %d, %s", code, stderr)
	}
	if code, _, _ := cli(t, "validate"); code != exitUsage {
		t.Errorf("no args: exit %d", code)
	}
}

// TestMisbehavingTools: a tool whose stdout is not JSON and one that hangs
// past its timeout both fail the run (exit 1) with a message that says so.
func TestMisbehavingTools(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tool string
		want       []string
		max        time.Duration
	}{
		{"not JSON", `{command: ["sh", "-c", "cat >/dev/null; echo all good"], effect: none}`,
			[]string{"tool chatty: stdout is not JSON", `"all good\n"`}, 5 * time.Second},
		{"timeout", `{command: ["sh", "-c", "exec sleep 30"], effect: none, timeout: 200ms}`,
			[]string{"tool chatty: timed out after 200ms (the tool's timeout)"}, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeFlow(t, "name: misbehaving\ntools:\n  chatty: "+tt.tool+"\nsteps:\n  - {id: a, tool: chatty, args: {}}\n")
			start := time.Now()
			code, out, stderr := cli(t, "run", path)
			took := time.Since(start)
			if code != exitRunFailed {
				t.Fatalf("exit %d, want 1; stdout: %s stderr: %s", code, out, stderr)
			}
			if took > tt.max {
				t.Errorf("took %s", took)
			}
			if !strings.Contains(out, "a                        failed") {
				t.Errorf("stdout does not show step a failed:\n%s", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	good := writeFlow(t, "name: g\ntools:\n  e: {command: [cat], effect: none}\nsteps:\n  - {id: a, tool: e, args: {}}\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no such flow", []string{"run", filepath.Join(t.TempDir(), "nope")}, "load flow"},
		{"no args", []string{"run"}, "accepts 1 arg"},
		{"bad output", []string{"run", good, "--output", "yaml"}, `--output must be text or json, not "yaml"`},
		{"two inputs", []string{"run", good, "--input-json", "{}", "--input", "x.json"}, "not both"},
		{"input file missing", []string{"run", good, "--input", filepath.Join(t.TempDir(), "in.json")}, "read input"},
		{"input not JSON", []string{"run", good, "--input-json", "{'a': 1}"}, "input --input-json is not JSON: line 1 col 2"},
		{"input not JSON, line 3", []string{"run", good, "--input-json", "{\n  \"a\": 1,\n  oops\n}"}, "line 3 col 3: invalid character 'o'"},
		{"two input values", []string{"run", good, "--input-json", "{} {}"}, "more than one JSON value"},
		{"unknown flag", []string{"validate", good, "--frob"}, "unknown flag: --frob"},
		{"unknown command", []string{"runn", good}, `unknown command "runn"`},
		{"unknown schema", []string{"schema", "nope"}, "use flow, config, agent or plan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, stderr := cli(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want 2; stderr: %s", code, stderr)
			}
			if out != "" {
				t.Errorf("stdout = %q, want nothing", out)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr)
			}
		})
	}
}

func TestSchemaCommands(t *testing.T) {
	t.Parallel()
	for _, which := range []string{"flow", "config", "plan"} {
		code, out, _ := cli(t, "schema", which)
		var v map[string]any
		if code != exitOK {
			t.Fatalf("schema %s: exit %d", which, code)
		}
		decodeOne(t, out, &v)
		if _, ok := v["$schema"]; !ok {
			t.Errorf("schema %s has no $schema: %.200s", which, out)
		}
	}
}

// The result of `rein run --output json` and `rein runs show` give each
// step's model calls, tokens and corrections; durations keep their
// fraction of a millisecond.
func TestStepUsageInResults(t *testing.T) {
	t.Setenv("REIN_OUTBOX", t.TempDir())
	db := filepath.Join(t.TempDir(), "rein.db")
	code, out, stderr := cli(t, "run", "../../examples/resume-screen", "--db", db, "--output", "json")
	if code != exitOK {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	type use struct {
		StepID      string   `json:"step_id"`
		Status      string   `json:"status"`
		Attempts    int      `json:"attempts"`
		Attempt     int      `json:"attempt"`
		Corrections int      `json:"corrections"`
		LLMCalls    int      `json:"llm_calls"`
		TokensIn    int      `json:"tokens_in"`
		TokensOut   int      `json:"tokens_out"`
		DurationMS  *float64 `json:"duration_ms"`
	}
	var res struct {
		RunID string         `json:"run_id"`
		Steps map[string]use `json:"steps"`
	}
	decodeOne(t, out, &res)
	sc := res.Steps["score_candidate"]
	if sc.Attempts != 1 || sc.Corrections != 1 || sc.LLMCalls != 2 || sc.TokensIn != 180 || sc.TokensOut != 30 || sc.DurationMS == nil || *sc.DurationMS <= 0 {
		t.Errorf("score_candidate = %+v, want 1 attempt, 1 correction, 2 calls, 180/30 tokens, a duration", sc)
	}
	if ex := res.Steps["extract_info"]; ex.LLMCalls != 1 || ex.TokensIn != 96 || ex.Corrections != 0 {
		t.Errorf("extract_info = %+v", ex)
	}

	code, out, _ = cli(t, "runs", "show", res.RunID, "--db", db, "--output", "json")
	var view struct {
		Steps []use `json:"steps"`
	}
	decodeOne(t, out, &view)
	found := false
	for _, s := range view.Steps {
		if s.StepID == "score_candidate" {
			found = true
			if s.Attempt != 1 || s.Corrections != 1 || s.LLMCalls != 2 || s.TokensIn != 180 || s.TokensOut != 30 {
				t.Errorf("runs show: score_candidate = %+v", s)
			}
		}
	}
	if code != exitOK || !found {
		t.Fatalf("runs show: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, "runs", "show", res.RunID, "--db", db)
	if code != exitOK || !regexp.MustCompile(`(?m)^  score_candidate +succeeded +attempts=1 +model_calls=2 tokens=180/30 corrections=1 `).MatchString(out) {
		t.Errorf("runs show text: exit %d\n%s", code, out)
	}
}
