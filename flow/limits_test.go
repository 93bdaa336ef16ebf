package flow_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
)

// chain returns a flow of n tool steps in a line, each reading the first.
func chain(n int) string {
	var b strings.Builder
	b.WriteString("name: chain\nsteps:\n  - {id: s0, type: tool, tool: search}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  - {id: s%d, type: tool, tool: send_email, args: {q: \"{s0.results}\"}}\n", i)
	}
	return b.String()
}

// TestLimits checks that each bound on a flow file is reported at its
// place, before the work it prevents.
func TestLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		line, col int
		msg       string
	}{
		{"too many steps", chain(20_000), flow.MaxSteps + 3, 5, "the flow has 20000 steps, more than the 10000 a flow may have"},
		{"nesting", "name: x\nsteps:\n  - id: a\n    type: tool\n    tool: search\n    args: {q: " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "}\n",
			6, 139, "the flow file nests more than 128 levels deep here"},
		{"documents", strings.Repeat("---\nname: x\n", 100_000), 33, 1, "the flow file holds more than 16 YAML documents"},
		{"NUL", "name: \"x\x00\"\nsteps: []\n", 1, 9, "the flow file holds a NUL byte here"},
		{"invalid UTF-8", "name: x\nsteps:\n  - id: a\n    description: caf\xe9\n", 4, 21, "the flow file is not valid UTF-8 here (byte 0xe9)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			errs := parseErr(t, tt.src)
			if len(errs) != 1 || errs[0].Line != tt.line || errs[0].Col != tt.col || !strings.Contains(errs[0].Message, tt.msg) {
				t.Fatalf("errors = %v, want one at %d:%d containing %q", errs, tt.line, tt.col, tt.msg)
			}
		})
	}
}

// TestLongChain checks that a flow at the step limit, every step reading
// the first one through all the others, validates: upstream sets are not
// materialised per step.
func TestLongChain(t *testing.T) {
	t.Parallel()
	f := parse(t, chain(flow.MaxSteps))
	last := f.Steps[len(f.Steps)-1]
	if !f.IsUpstream(last, "s0") || f.IsUpstream(f.Steps[0], last.ID) {
		t.Fatal("IsUpstream is wrong on the chain")
	}
	if len(f.Order) != flow.MaxSteps || f.Order[0] != 0 || f.Order[len(f.Order)-1] != flow.MaxSteps-1 {
		t.Fatalf("Order has %d steps", len(f.Order))
	}
}

// TestBOM checks that a flow, a rein.yaml and a schema file that start with
// a UTF-8 byte order mark load, with positions as without it.
func TestBOM(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const bom = "\xEF\xBB\xBF"
	files := map[string]string{
		"flow.yaml":        bom + "name: x\nsteps:\n  - {id: a, type: tool, tool: search, output_schema: out}\n",
		"rein.yaml":        bom + "tools:\n  greet: {command: [echo], effect: none}\n",
		"schemas/out.json": bom + `{"type": "object"}`,
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := flow.Load(filepath.Join(dir, "flow.yaml"), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if s := f.Steps[0]; s.Pos.Line != 3 || s.OutputSchema == nil {
		t.Fatalf("step a at %v, schema %v", s.Pos, s.OutputSchema)
	}
	cfg, err := flow.LoadConfig(filepath.Join(dir, "rein.yaml"))
	if err != nil || cfg.Tools["greet"] == nil {
		t.Fatalf("LoadConfig = %v, %v", cfg, err)
	}
	_, err = flow.Parse([]byte(bom+"name: x\nsteps: 1\n"), "flow.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "flow.yaml:2:8: steps must be a list") {
		t.Fatalf("err = %v, want it at 2:8", err)
	}
}

// TestSchemaFileLimit checks that a schema file past MaxSchemaFileBytes is
// refused, naming it.
func TestSchemaFileLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := `{"description": "` + strings.Repeat("x", flow.MaxSchemaFileBytes) + `"}`
	if err := os.WriteFile(filepath.Join(dir, "out.json"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	src := "name: x\nsteps:\n  - {id: a, type: tool, tool: search, output_schema: out}\n"
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := flow.Load(filepath.Join(dir, "flow.yaml"), testOptions())
	if err == nil || !strings.Contains(err.Error(), "output_schema: schema file out.json is 1048595 bytes, more than the 1048576 a schema file may have") {
		t.Fatalf("err = %v", err)
	}
}

// TestNamesArePlainText checks that NUL, control characters and text that
// is not UTF-8, which YAML escapes can write into quoted strings, are
// rejected in names, at their place.
func TestNamesArePlainText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src       string
		line, col int
		msg       string
	}{
		{"name: \"a\\0b\"\nsteps:\n  - {id: a, tool: search, args: {}}\n", 1, 7, `name "a\x00b" holds a NUL character`},
		{"name: \"a\\e[2Jb\"\nsteps:\n  - {id: a, tool: search, args: {}}\n", 1, 7, `name "a\x1b[2Jb" holds the control character U+001B`},
		{"name: x\nversion: \"1\\x85\"\nsteps:\n  - {id: a, tool: search, args: {}}\n", 2, 10, "holds the control character U+0085"},
		{"name: x\nschemas:\n  \"s\\0\": {type: object}\nsteps:\n  - {id: a, tool: search, args: {}}\n", 3, 3, `schema name "s\x00" holds a NUL character`},
	}
	for _, tt := range tests {
		errs := parseErr(t, tt.src)
		if len(errs) == 0 || errs[0].Line != tt.line || errs[0].Col != tt.col || !strings.Contains(errs[0].Message, tt.msg) {
			t.Errorf("errors = %v, want %d:%d containing %q", errs, tt.line, tt.col, tt.msg)
		}
	}
	_, err := flow.ParseConfig([]byte("models:\n  \"m\\e\": {provider: openai, model: x}\n"), "rein.yaml")
	if err == nil || !strings.Contains(err.Error(), `rein.yaml:2:3: model name "m\x1b" holds the control character U+001B`) {
		t.Errorf("ParseConfig = %v", err)
	}
}

// TestTrustedToolsOnly checks that a flow declaring tools of its own is
// refused, at its tools: key, when only trusted tools are allowed.
func TestTrustedToolsOnly(t *testing.T) {
	t.Parallel()
	src := "name: x\ntools:\n  sh: {command: [sh, -c, 'echo {}'], effect: none}\nsteps:\n  - {id: a, tool: sh, args: {}}\n"
	opts := testOptions()
	if _, err := flow.Parse([]byte(src), "flow.yaml", opts); err != nil {
		t.Fatal(err)
	}
	opts.TrustedToolsOnly = true
	_, err := flow.Parse([]byte(src), "flow.yaml", opts)
	if err == nil || !strings.Contains(err.Error(), "flow.yaml:2:1: the flow declares tools: of its own, and only trusted tools are allowed") {
		t.Fatalf("err = %v", err)
	}
	if _, err := flow.Parse([]byte("name: x\nsteps:\n  - {id: a, tool: search, args: {}}\n"), "flow.yaml", opts); err != nil {
		t.Fatalf("a flow using the application's tools: %v", err)
	}
}

// TestConfigFileLimit checks that a rein.yaml past MaxFileBytes is refused,
// naming it, before it is read whole.
func TestConfigFileLimit(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rein.yaml")
	if err := os.WriteFile(path, []byte("# "+strings.Repeat("x", flow.MaxFileBytes)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := flow.LoadConfig(path)
	if err == nil || !strings.Contains(err.Error(), path+" is 4194306 bytes, more than the 4194304 it may have") {
		t.Fatalf("err = %v", err)
	}
}
