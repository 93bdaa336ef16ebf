package flow_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
)

// TestValidationGolden loads every testdata/invalid/*.yaml, which must fail,
// and compares the whole error text (every diagnostic, file:line:col) with
// the .golden file beside it.
func TestValidationGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 25 {
		t.Fatalf("found %d invalid flows, want at least 25", len(files))
	}
	// Options per file; the default knows every model and testTools.
	special := map[string]*flow.Options{
		"model_unconfigured.yaml": {Tools: testOptions().Tools},
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			t.Parallel()
			opts, ok := special[name]
			if !ok {
				opts = testOptions()
			}
			f, err := flow.Load(path, opts)
			if err == nil {
				t.Fatalf("Load(%s) succeeded, want an error", path)
			}
			if f != nil {
				t.Errorf("Load returned a flow with its error")
			}
			var fe *flow.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error is %T, want *flow.Error: %v", err, err)
			}
			for _, d := range fe.Diagnostics {
				if d.File != path || d.Line < 1 || d.Col < 1 {
					t.Errorf("badly located diagnostic %+v", d)
				}
			}
			golden(t, strings.TrimSuffix(path, ".yaml")+".golden", err.Error()+"\n")
		})
	}
}

// TestValidationPositions pins the exact line:col of some diagnostics, so a
// golden refresh cannot silently move them.
func TestValidationPositions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file      string
		line, col int
		contains  string
	}{
		// the key of the unknown field
		{"unknown_field.yaml", 5, 5, `unknown field "retires" in step (did you mean "retries"?)`},
		// the value of the repeated id
		{"duplicate_ids.yaml", 5, 9, "duplicate step id (first defined at line 3)"},
		// the entry of requires
		{"unknown_requires.yaml", 6, 16, `requires unknown step "extrct" (did you mean "extract"?)`},
		// the step that closes the cycle, at its first key
		{"cycle.yaml", 6, 5, "requires form a cycle: b → c → a → b"},
		// the second ">" inside the quoted expression
		{"when_compile.yaml", 6, 18, "when: unexpected token"},
		// the name of the forbidden call
		{"when_python.yaml", 6, 12, "function __import__ is not allowed"},
		// the "{" of the placeholder inside the quoted template
		{"undeclared_field.yaml", 13, 29, `extract has no field "resume": its schema declares candidate, years`},
		{"forward_reference.yaml", 5, 33, "names step extract, which is not upstream of this step"},
		// the value, not the key
		{"retries_range.yaml", 5, 14, "retries must be between 0 and 10, not 11"},
		{"timeouts.yaml", 5, 14, "timeout must be positive"},
		{"timeouts.yaml", 8, 14, `timeout: "soon" is not a duration`},
		{"fallback_value_schema.yaml", 6, 21, "fallback_value breaks schema score output_schema: at /score: got string, want number"},
		{"anchors.yaml", 5, 21, "YAML anchors and aliases are not supported"},
		{"tabs.yaml", 4, 1, "YAML syntax"},
		{"yaml_syntax.yaml", 4, 22, "YAML syntax"},
		{"empty_steps.yaml", 2, 8, "steps is empty"},
		{"type_unknown.yaml", 4, 11, `unknown type "tol": use llm, tool, approval, route, plan, agent, submit or source (did you mean "tool"?)`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s:%d:%d", tt.file, tt.line, tt.col), func(t *testing.T) {
			t.Parallel()
			_, err := flow.Load(filepath.Join("testdata", "invalid", tt.file), testOptions())
			var fe *flow.Error
			if !errors.As(err, &fe) {
				t.Fatalf("Load error = %v, want *flow.Error", err)
			}
			for _, d := range fe.Diagnostics {
				if strings.Contains(d.Message, tt.contains) {
					if d.Line != tt.line || d.Col != tt.col {
						t.Errorf("%q at %d:%d, want %d:%d", tt.contains, d.Line, d.Col, tt.line, tt.col)
					}
					return
				}
			}
			t.Errorf("no diagnostic contains %q:\n%v", tt.contains, err)
		})
	}
}

// TestValidationReportsAll checks that independent problems come back
// together, each once, and that the error text lists them one per line.
func TestValidationReportsAll(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "invalid", "five_problems.yaml")
	_, err := flow.Load(path, testOptions())
	var fe *flow.Error
	if !errors.As(err, &fe) {
		t.Fatalf("Load error = %v, want *flow.Error", err)
	}
	errs := errorsOnly(fe.Diagnostics)
	want := []struct {
		line, col int
		step, msg string
	}{
		{5, 14, "extract", "retries must be between 0 and 10"},
		{6, 14, "extract", `timeout: "soon" is not a duration`},
		{9, 15, "score", `on_error must be raise, skip, fallback, retry or escalate, not "explode"`},
		{10, 5, "score", `unknown field "colour" in step`},
		{13, 11, "notify", `unknown tool "nope"`},
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), err)
	}
	for i, w := range want {
		d := errs[i]
		if d.Line != w.line || d.Col != w.col || d.Step != w.step || !strings.Contains(d.Message, w.msg) {
			t.Errorf("error %d = %s\nwant %d:%d: step %s: %s…", i, d, w.line, w.col, w.step, w.msg)
		}
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != len(fe.Diagnostics) {
		t.Errorf("Error() has %d lines for %d diagnostics", len(lines), len(fe.Diagnostics))
	}
}

// TestLoadErrors covers the I/O side of Load: missing file, a folder, a
// file too large. Those are plain errors, not *flow.Error.
func TestLoadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, flow.MaxFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope.yaml"), "no such file"},
		{"folder", dir, "is a folder"},
		{"too large", big, "more than the"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := flow.Load(tt.path, nil)
			var fe *flow.Error
			if err == nil || errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load(%s) = %v, want a plain error containing %q", tt.path, err, tt.want)
			}
		})
	}
}
