package graph

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/tool"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// testOptions accept every tool and model name. Steps retry only where
// they say so (rein.yaml defaults: {retries: 0}), so that the drawings
// show the paths each case is about.
var testOptions = &flow.Options{
	Tools:    func(name string) (tool.Spec, bool) { return tool.Spec{Name: name}, true },
	Models:   func(string) bool { return true },
	Defaults: &flow.Defaults{Retries: new(0)},
}

// parse compiles a flow from YAML text as if it were testdata/name.yaml.
func parse(t *testing.T, name string, src []byte) *flow.Flow {
	t.Helper()
	f, err := flow.Parse(src, filepath.Join("testdata", name+".yaml"), testOptions)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return f
}

// load compiles testdata/name.yaml.
func load(t *testing.T, name string) *flow.Flow {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, name, src)
}

// golden compares got with testdata/file, or rewrites it under -update.
func golden(t *testing.T, file string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", file)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./graph -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run go test ./graph -update after checking it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// goldenFlows are the testdata flows drawn into golden files.
var goldenFlows = []string{
	"resume_screen", // the reference LLM flow of flow/testdata/design
	"diamond",       // parallel branches that join; ids with '-'
	"loops",         // for_each, repeat, fallback model and tool, skip, escaping
	"plain_list",    // implicit order; a skip that propagates only to a reader
}

func TestGolden(t *testing.T) {
	t.Parallel()
	formats := []struct{ format, ext string }{{"mermaid", ".mmd"}, {"dot", ".dot"}}
	for _, name := range goldenFlows {
		for _, fm := range formats {
			t.Run(name+"/"+fm.format, func(t *testing.T) {
				t.Parallel()
				f := load(t, name)
				var first, second bytes.Buffer
				if err := Render(&first, f, fm.format); err != nil {
					t.Fatal(err)
				}
				if err := Render(&second, f, fm.format); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(first.Bytes(), second.Bytes()) {
					t.Fatal("two renderings of the same flow differ")
				}
				golden(t, name+fm.ext, first.Bytes())
			})
		}
	}
}

// TestPaths checks each failure path on small flows, in both formats.
func TestPaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		yaml    string
		mermaid []string // lines the Mermaid output must hold
		dot     []string // lines the DOT output must hold
		absent  []string // text neither output may hold
	}{
		{
			name: "raise is the default",
			yaml: "name: x\nsteps:\n  - { id: a, tool: t }\n",
			mermaid: []string{`  start --> s0_a`, `  s0_a --> finish`, `  s0_a -.->|"error"| run_failed`,
				`  run_failed(["run failed"]):::failed`, `  linkStyle 2 stroke:#c62828,color:#c62828`},
			dot:    []string{`  s0_a -> run_failed [label="error", style=dashed, color="#c62828", fontcolor="#c62828", class="failure"];`},
			absent: []string{"retry"},
		},
		{
			name:    "default retries are drawn",
			yaml:    "name: x\nsteps:\n  - { id: a, tool: t }\n",
			mermaid: []string{`  s0_a -.->|"retry ×2 (transient)"| s0_a`},
		},
		{
			name:    "transient retries",
			yaml:    "name: x\nsteps:\n  - { id: a, tool: t, retries: 2 }\n",
			mermaid: []string{`  s0_a -.->|"retry ×2 (transient)"| s0_a`},
			dot:     []string{`  s0_a -> s0_a [label="retry ×2 (transient)", style=dashed, color="#c62828", fontcolor="#c62828", class="retry"];`},
		},
		{
			name:    "on_error retry retries any error",
			yaml:    "name: x\nsteps:\n  - { id: a, tool: t, retries: 4, on_error: retry }\n",
			mermaid: []string{`  s0_a -.->|"retry ×4 (any error)"| s0_a`, `  s0_a -.->|"error"| run_failed`},
		},
		{
			name: "skip defaults and continues; nothing can fail the run",
			yaml: "name: x\nsteps:\n  - { id: a, tool: t, on_error: skip, fallback_value: {n: 1} }\n  - { id: b, tool: t, on_error: skip }\n",
			mermaid: []string{`  s0_a_defaulted>"defaulted<br>{#quot;n#quot;#58;1}"]:::defaulted`,
				`  s0_a -.->|"error#58; skip"| s0_a_defaulted`, `  s0_a_defaulted -.-> s1_b`,
				`  s1_b_defaulted>"defaulted<br>null"]:::defaulted`, `  s1_b_defaulted -.-> finish`},
			dot:    []string{`  s0_a_defaulted -> s1_b [style=dashed, color="#ef6c00", fontcolor="#ef6c00", class="recovery"];`},
			absent: []string{"run_failed"},
		},
		{
			name: "a fallback value cannot fail",
			yaml: "name: x\nsteps:\n  - { id: a, tool: t, on_error: fallback, fallback: { value: 7 } }\n",
			mermaid: []string{`  s0_a_fallback[/"fallback value<br>7"/]:::fallback`,
				`  s0_a -.->|"error#58; fallback"| s0_a_fallback`, `  s0_a_fallback -.-> finish`},
			absent: []string{"run_failed"},
		},
		{
			name: "a fallback tool can fail",
			yaml: "name: x\nsteps:\n  - { id: a, tool: t, on_error: fallback, fallback: { tool: u } }\n",
			mermaid: []string{`  s0_a_fallback[/"fallback<br>tool · u"/]:::fallback`,
				`  s0_a_fallback -.->|"fallback error"| run_failed`},
		},
		{
			name: "when labels the edges in and goes around",
			yaml: "name: x\nsteps:\n  - { id: a, tool: t }\n  - { id: b-1, tool: t, when: 'a.ok == \"y\"' }\n  - { id: c, tool: t }\n",
			mermaid: []string{`  s0_a -.->|"when a.ok == #quot;y#quot;"| s1_b_1`, `  s0_a -.->|"skipped"| s2_c`,
				`  s1_b_1["b-1<br>tool · t"]:::step`, `  s1_b_1 -.->|"then"| s2_c`, `  linkStyle 1,2 stroke:#3949ab,color:#1a237e`},
			dot: []string{`  s0_a -> s1_b_1 [label="when a.ok == \"y\"", style=dotted, class="order"];`,
				`  s1_b_1 -> s2_c [label="then", style=dotted, class="order"];`,
				`  s0_a -> s2_c [label="skipped", style=dashed, color="#9e9e9e", fontcolor="#757575", class="skipped"];`},
		},
		{
			name:    "a skip goes on past the steps it propagates to",
			yaml:    "name: x\nsteps:\n  - { id: a, tool: t }\n  - { id: b, tool: t, when: 'a.ok' }\n  - { id: c, tool: t, args: {x: '{b}'} }\n  - { id: d, tool: t, requires: [c] }\n  - { id: e, tool: t }\n",
			mermaid: []string{`  s0_a -.->|"skipped"| s4_e`, `  s2_c --> s3_d`},
			absent:  []string{`s0_a -.->|"skipped"| s2_c`, `s0_a -.->|"skipped"| s3_d`},
		},
		{
			name:    "explicit requires are dependencies",
			yaml:    "name: x\nsteps:\n  - { id: a, tool: t }\n  - { id: b, tool: t, requires: [a], when: 'a.ok' }\n  - { id: c, tool: t, requires: [b] }\n",
			mermaid: []string{`  s0_a -->|"when a.ok"| s1_b`, `  s1_b --> s2_c`, `  s0_a -.->|"skipped"| finish`},
			absent:  []string{"then"},
		},
		{
			name: "escalate waits for a person",
			yaml: "name: x\nsteps:\n  - { id: a, tool: t, on_error: escalate }\n",
			mermaid: []string{`  s0_a_person{{"waits for a person<br>approve · reject · settle"}}:::person`,
				`  s0_a -.->|"error#58; escalate"| s0_a_person`, `  s0_a_person -.->|"approve#58; try again"| s0_a`,
				`  s0_a_person -.->|"settle"| finish`, `  s0_a_person -.->|"reject"| run_failed`},
			dot: []string{`  s0_a_person [label="waits for a person\napprove · reject · settle", shape=hexagon, fillcolor="#f3e5f5", color="#8e24aa", class="person"];`},
		},
		{
			name:    "a root with when is skipped from the start",
			yaml:    "name: x\nsteps:\n  - { id: a, tool: t, when: 'input.go' }\n",
			mermaid: []string{`  start -->|"when input.go"| s0_a`, `  start -.->|"skipped"| finish`},
		},
		{
			name:    "a skip reaches a reader further down the list",
			yaml:    "name: x\nsteps:\n  - { id: a, tool: t }\n  - { id: b, tool: t, when: 'a.x > 5' }\n  - { id: c, tool: t }\n  - { id: d, tool: t, args: {v: '{b.y}'} }\n",
			mermaid: []string{`  s0_a -.->|"skipped"| s2_c`, `  s2_c -.->|"skipped with b"| finish`},
			dot:     []string{`  s2_c -> finish [label="skipped with b", style=dashed, color="#9e9e9e", fontcolor="#757575", class="skipped"];`},
		},
		{
			name:   "a reader of a step that cannot be skipped draws no skip",
			yaml:   "name: x\nsteps:\n  - { id: a, tool: t }\n  - { id: b, tool: t }\n  - { id: c, tool: t, args: {v: '{a.y}'} }\n",
			absent: []string{"skipped"},
		},
		{
			name:    "roots and leaves",
			yaml:    "name: x\nsteps:\n  - { id: a, tool: t }\n  - { id: b, tool: t, requires: [] }\n",
			mermaid: []string{`  start --> s0_a`, `  start --> s1_b`, `  s0_a --> finish`, `  s1_b --> finish`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := *testOptions
			if strings.HasPrefix(tc.name, "default retries") {
				opts.Defaults = nil
			}
			f, err := flow.Parse([]byte(tc.yaml), filepath.Join("testdata", "paths.yaml"), &opts)
			if err != nil {
				t.Fatal(err)
			}
			var m, d bytes.Buffer
			if err := Mermaid(&m, f); err != nil {
				t.Fatal(err)
			}
			if err := DOT(&d, f); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.mermaid {
				if !hasLine(m.String(), want) {
					t.Errorf("mermaid output has no line %q:\n%s", want, m.String())
				}
			}
			for _, want := range tc.dot {
				if !hasLine(d.String(), want) {
					t.Errorf("dot output has no line %q:\n%s", want, d.String())
				}
			}
			for _, no := range tc.absent {
				if strings.Contains(m.String(), no) || strings.Contains(d.String(), no) {
					t.Errorf("output holds %q:\n%s\n%s", no, m.String(), d.String())
				}
			}
		})
	}
}

func hasLine(out, line string) bool {
	for _, l := range strings.Split(out, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

func TestRenderErrors(t *testing.T) {
	t.Parallel()
	f := parse(t, "errors", []byte("name: x\nsteps:\n  - { id: a, tool: t }\n"))
	tests := []struct {
		name   string
		flow   *flow.Flow
		format string
		w      *failWriter
		want   string
	}{
		{"unknown format", f, "svg", nil, `unknown format "svg": use mermaid or dot`},
		{"empty format", f, "", nil, `unknown format "": use mermaid or dot`},
		{"nil flow mermaid", nil, "mermaid", nil, "graph: no flow to draw"},
		{"nil flow dot", nil, "dot", nil, "graph: no flow to draw"},
		{"writer fails", f, "DOT", &failWriter{}, "write graph: disk full"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var w interface{ Write([]byte) (int, error) } = &bytes.Buffer{}
			if tc.w != nil {
				w = tc.w
			}
			err := Render(w, tc.flow, tc.format)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Render error = %v, want %q", err, tc.want)
			}
		})
	}
}

type failWriter struct{}

func (*failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestFormats(t *testing.T) {
	t.Parallel()
	f := parse(t, "formats", []byte("name: x\nsteps:\n  - { id: a, tool: t }\n"))
	for _, name := range Formats() {
		if err := Render(&bytes.Buffer{}, f, name); err != nil {
			t.Errorf("Formats() lists %q, but Render rejects it: %v", name, err)
		}
	}
}
