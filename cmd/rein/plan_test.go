package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// planDir copies testdata/plan (a rein.yaml, its tools and plans) into a
// fresh folder: the tools append to calls.log there, so each test sees only
// its own calls.
func planDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "plan")
	if err := os.CopyFS(dir, os.DirFS("testdata/plan")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// calls returns the tool calls logged in dir, one per line.
func calls(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "calls.log"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

type planRunOut struct {
	Status  string         `json:"status"`
	Outputs map[string]any `json:"outputs"`
	Steps   []struct {
		ID, Tool, Status, Error string
	} `json:"steps"`
	Error *struct {
		Class, Budget, Step, Tool, Message string
	} `json:"error"`
	Problems []struct{ Pointer, Message string } `json:"problems"`
}

type planValidateOut struct {
	Valid    bool                                `json:"valid"`
	Problems []struct{ Pointer, Message string } `json:"problems"`
}

func TestPlanRunValid(t *testing.T) {
	t.Parallel()
	dir := planDir(t)
	plan := filepath.Join(dir, "good.json")

	code, out, stderr := cli(t, "plan", "validate", plan)
	if code != exitOK || !strings.Contains(out, "good.json: ok (3 steps") {
		t.Fatalf("validate: exit %d\n%s%s", code, out, stderr)
	}
	if got := calls(t, dir); got != nil {
		t.Fatalf("validate ran tools: %v", got)
	}

	code, out, stderr = cli(t, "plan", "run", plan)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"succeeded", `convert              succeeded  {"fahrenheit":64.4}`, `{"brief":"Tokyo: 64.4 F"}`} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"plan_step_started  weather tool=read_weather", "plan_step_settled  brief tool=write_brief succeeded"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks progress %q:\n%s", want, stderr)
		}
	}
	if got := calls(t, dir); strings.Join(got, ",") != "read_weather Tokyo,convert_temperature 18,write_brief Tokyo" {
		t.Errorf("calls = %v", got)
	}

	code, out, _ = cli(t, "plan", "run", plan, "--output", "json")
	var res planRunOut
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	if code != exitOK || res.Status != "succeeded" || res.Error != nil || len(res.Steps) != 3 {
		t.Fatalf("json run: exit %d %+v", code, res)
	}
	if f := res.Outputs["convert"].(map[string]any)["fahrenheit"]; f != 64.4 {
		t.Errorf("outputs.convert.fahrenheit = %v", f)
	}
	if b := res.Outputs["brief"].(map[string]any)["brief"]; b != "Tokyo: 64.4 F" {
		t.Errorf("outputs.brief = %v", b)
	}

	code, out, _ = cli(t, "plan", "validate", plan, "-o", "json")
	var v planValidateOut
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != exitOK || !v.Valid || v.Problems == nil || len(v.Problems) != 0 {
		t.Fatalf("json validate: exit %d %v %s", code, err, out)
	}
}

func TestPlanInvalidRunsNothing(t *testing.T) {
	t.Parallel()
	dir := planDir(t)
	tests := []struct {
		plan  string
		flags []string
		want  []string // pointer: message fragments
	}{
		{"duplicate.json", nil, []string{`/steps/1/id: duplicate step id "weather" (/steps/0 has it)`}},
		{"later.json", nil, []string{`/steps/0/args/celsius: $ref "weather.temperature_c" uses step "weather", which comes later (/steps/1)`}},
		{"missing_field.json", nil, []string{`/steps/1/args/celsius: $ref "weather.humidity": weather has no field "humidity"`}},
		{"good.json", []string{"--tools", "read_weather,convert_temperature"}, []string{`/steps/2/tool: tool "write_brief" is not allowed in this plan (allowed: convert_temperature, read_weather)`}},
		{"good.json", []string{"--max-steps", "2"}, []string{"3 steps", "max_steps"}},
		{"prose.json", nil, []string{"prose.json: not valid JSON"}},
		{"truncated.json", nil, []string{"/steps/0/args: the JSON ends early"}},
		{"extra_fields.json", nil, []string{`/confidence: unknown field "confidence"`, `/steps/0/why: unknown field "why"`}},
	}
	for _, tt := range tests {
		path := filepath.Join(dir, tt.plan)
		for _, cmd := range []string{"validate", "run"} {
			code, out, stderr := cli(t, append([]string{"plan", cmd, path}, tt.flags...)...)
			if code != exitUsage {
				t.Errorf("%s %s %v: exit %d, want 2\n%s%s", cmd, tt.plan, tt.flags, code, out, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("%s %s %v: stderr lacks %q:\n%s", cmd, tt.plan, tt.flags, w, stderr)
				}
			}
			if !strings.Contains(stderr, "nothing ran") || strings.Contains(stderr, "plan_step_started") {
				t.Errorf("%s %s: stderr:\n%s", cmd, tt.plan, stderr)
			}
			if strings.HasPrefix(tt.want[0], "/") && !strings.Contains(stderr, tt.plan+": /") {
				t.Errorf("%s %s: problems are not PLAN: /pointer: message lines:\n%s", cmd, tt.plan, stderr)
			}
		}
		// The JSON forms carry the same problems with their pointers.
		code, out, _ := cli(t, append([]string{"plan", "validate", path, "-o", "json"}, tt.flags...)...)
		var v planValidateOut
		if err := json.Unmarshal([]byte(out), &v); err != nil || code != exitUsage || v.Valid || len(v.Problems) == 0 {
			t.Errorf("validate %s json: exit %d %v\n%s", tt.plan, code, err, out)
		}
		code, out, _ = cli(t, append([]string{"plan", "run", path, "-o", "json"}, tt.flags...)...)
		var r planRunOut
		if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitUsage || r.Status != "invalid" || len(r.Problems) != len(v.Problems) || r.Error == nil {
			t.Errorf("run %s json: exit %d %v\n%s", tt.plan, code, err, out)
		}
		if strings.HasPrefix(tt.want[0], "/") {
			ptr, _, _ := strings.Cut(tt.want[0], ": ")
			if v.Problems[0].Pointer != ptr || r.Problems[0].Pointer != ptr {
				t.Errorf("%s: pointers %q and %q, want %q", tt.plan, v.Problems[0].Pointer, r.Problems[0].Pointer, ptr)
			}
		}
	}
	if got := calls(t, dir); got != nil {
		t.Fatalf("an invalid plan ran tools: %v", got)
	}
}

func TestPlanRunStepFails(t *testing.T) {
	t.Parallel()
	dir := planDir(t)
	plan := filepath.Join(dir, "failing.json")
	code, out, stderr := cli(t, "plan", "run", plan)
	if code != exitRunFailed {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"plan " + plan + ": failed", "convert              not_run", "upstream 503"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, "weather tool=read_primary_weather failed") {
		t.Errorf("stderr:\n%s", stderr)
	}

	code, out, _ = cli(t, "plan", "run", plan, "--output", "json")
	var res planRunOut
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	if code != exitRunFailed || res.Status != "failed" || res.Error == nil || res.Error.Step != "weather" ||
		res.Error.Tool != "read_primary_weather" || res.Error.Class != "business" || !strings.Contains(res.Error.Message, "upstream 503") {
		t.Fatalf("json: exit %d %+v", code, res)
	}
	if len(res.Outputs) != 0 || res.Steps[1].Status != "not_run" {
		t.Errorf("a step after the failure ran: %+v", res)
	}
	// The step that depends on the failed one never ran.
	if got := calls(t, dir); strings.Join(got, ",") != "read_primary_weather,read_primary_weather" {
		t.Errorf("calls = %v", got)
	}
}

func TestPlanConfigLookup(t *testing.T) {
	t.Parallel()
	dir := planDir(t)
	elsewhere := t.TempDir()
	data, err := os.ReadFile(filepath.Join(dir, "good.json"))
	if err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(elsewhere, "good.json")
	if err := os.WriteFile(plan, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// No rein.yaml beside the plan, nor in the current directory (cmd/rein).
	code, _, stderr := cli(t, "plan", "validate", plan)
	if code != exitUsage || !strings.Contains(stderr, "--config FILE") {
		t.Fatalf("no rein.yaml: exit %d %s", code, stderr)
	}
	if code, out, stderr := cli(t, "plan", "run", plan, "--config", filepath.Join(dir, "rein.yaml")); code != exitOK || !strings.Contains(out, "64.4") {
		t.Fatalf("--config: exit %d\n%s%s", code, out, stderr)
	}
	bad := filepath.Join(elsewhere, "rein.yaml")
	if err := os.WriteFile(bad, []byte("tools:\n  x: {command: [./x.sh], effect: sideways}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := cli(t, "plan", "validate", plan); code != exitUsage || !strings.Contains(stderr, "rein.yaml:2:") {
		t.Fatalf("bad rein.yaml beside the plan: exit %d %s", code, stderr)
	}
	for _, args := range [][]string{{"--output", "yaml"}, {"--max-steps", "0"}, {"--config", filepath.Join(elsewhere, "nope.yaml")}} {
		if code, _, _ := cli(t, append([]string{"plan", "validate", filepath.Join(dir, "good.json")}, args...)...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, _, _ := cli(t, "plan", "run", filepath.Join(dir, "missing.json")); code != exitUsage {
		t.Errorf("missing plan file: exit %d", code)
	}
}
