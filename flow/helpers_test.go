package flow_test

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/tool"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// testTools are the tools the application registers in these tests.
var testTools = map[string]tool.Spec{
	"send_email": {Name: "send_email", Effect: tool.EffectExternal},
	"search": {Name: "search", Effect: tool.EffectRead, OutputSchema: json.RawMessage(`{
		"type": "object",
		"properties": {"results": {"type": "array", "items": {"type": "object", "properties": {"title": {"type": "string"}}}}},
		"required": ["results"],
		"additionalProperties": false
	}`)},
}

// testOptions knows every model and the tools in testTools.
func testOptions() *flow.Options {
	return &flow.Options{
		Models: func(string) bool { return true },
		Tools: func(name string) (tool.Spec, bool) {
			s, ok := testTools[name]
			return s, ok
		},
	}
}

// parse parses src as a flow that must load without errors.
func parse(t *testing.T, src string) *flow.Flow {
	t.Helper()
	f, err := flow.Parse([]byte(src), "flow.yaml", testOptions())
	if err != nil {
		t.Fatalf("Parse: %v\n--- flow ---\n%s", err, src)
	}
	return f
}

// parseErr parses src, which must fail, and returns the diagnostics.
func parseErr(t *testing.T, src string) []flow.Diagnostic {
	t.Helper()
	_, err := flow.Parse([]byte(src), "flow.yaml", testOptions())
	if err == nil {
		t.Fatalf("Parse succeeded, want an error\n--- flow ---\n%s", src)
	}
	var fe *flow.Error
	if !errors.As(err, &fe) {
		t.Fatalf("Parse error is %T, want *flow.Error: %v", err, err)
	}
	return fe.Diagnostics
}

// errorsOnly drops warnings.
func errorsOnly(ds []flow.Diagnostic) []flow.Diagnostic {
	var out []flow.Diagnostic
	for _, d := range ds {
		if !d.Warning {
			out = append(out, d)
		}
	}
	return out
}

// wantDiag fails unless some error diagnostic contains every one of parts.
func wantDiag(t *testing.T, ds []flow.Diagnostic, parts ...string) {
	t.Helper()
	for _, d := range errorsOnly(ds) {
		all := true
		for _, p := range parts {
			if !strings.Contains(d.String(), p) {
				all = false
				break
			}
		}
		if all {
			return
		}
	}
	var lines []string
	for _, d := range ds {
		lines = append(lines, d.String())
	}
	t.Errorf("no diagnostic contains %q; got:\n%s", parts, strings.Join(lines, "\n"))
}

// golden compares got with the file at path, rewriting it under -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./flow -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run go test ./flow -update after checking the change)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}
