// Package delivery renders the files of a workflow task's delivery
// (server/workflowtool's prepare_delivery): deliverables.json,
// deliverables.md, deliverables.csv and run.mmd (the flow's Mermaid
// diagram, each step coloured by its status), plus every Format a package
// registered — deliverables.xlsx when delivery/xlsx is imported.
//
// The spreadsheet is a package of its own because its library (excelize)
// is large: a program that serves workflow tools links it only by
// importing delivery/xlsx, as cmd/rein does. Registration rather than a
// writer passed in Options because, like store drivers and model adapters,
// it lets the program's one list of imports decide what is linked, with
// no wiring at each place a workflow tool is made.
//
// Every renderer is deterministic: the same task gives the same bytes (no
// timestamps, objects by sorted key), so a delivery prepared again has the
// same sha256.
package delivery

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/graph"
	"github.com/reinhq/rein/trace"
)

// Task is what a delivery renders: a succeeded task, its flow and its
// artifacts.
type Task struct {
	// ID is the task's id (its run's).
	ID string
	// Workflow is the run's flow name.
	Workflow string
	// Status is the run's status.
	Status trace.RunStatus
	// Flow is the task's pinned flow.
	Flow *flow.Flow
	// Statuses holds each step's status, by step id.
	Statuses map[string]string
	// Artifacts holds every step's artifact, in flow order.
	Artifacts []Artifact
	// Deliverables holds the artifacts the delivery is about.
	Deliverables []Artifact
}

// Artifact is one step's output and who produced it; its fields are those
// of workflowtool.Artifact, which converts to it.
type Artifact struct {
	StepID   string           `json:"step_id"`
	Producer string           `json:"producer"`
	Attempt  int              `json:"attempt"`
	SHA256   string           `json:"sha256"`
	Status   trace.StepStatus `json:"status"`
	Output   json.RawMessage  `json:"output,omitempty"`
}

// Format is one file of a delivery.
type Format struct {
	// Name is the file's name in the delivery folder ("deliverables.csv").
	Name string
	// Render writes the file. It must be deterministic: the same task
	// gives the same bytes.
	Render func(w io.Writer, t *Task) error
}

var builtin = []Format{
	{Name: "deliverables.json", Render: renderJSON},
	{Name: "deliverables.md", Render: renderMarkdown},
	{Name: "deliverables.csv", Render: renderCSV},
	{Name: "run.mmd", Render: func(w io.Writer, t *Task) error { return graph.MermaidRun(w, t.Flow, t.Statuses) }},
}

var (
	mu         sync.RWMutex
	registered []Format
)

// Register adds f to every delivery prepared from then on. A package that
// renders another format calls it from its init (delivery/xlsx does).
// Register panics when f has no Name or Render, when its Name is not a
// plain file name, or when a format of that name exists. It is safe for
// concurrent use.
func Register(f Format) {
	if f.Name == "" || f.Render == nil || strings.ContainsAny(f.Name, `/\`) || f.Name == "." || f.Name == ".." {
		panic(fmt.Sprintf("delivery: Register(%q): a format needs a plain file name and a Render", f.Name))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, g := range append(builtin[:len(builtin):len(builtin)], registered...) {
		if g.Name == f.Name {
			panic("delivery: Register called twice for " + f.Name)
		}
	}
	registered = append(registered, f)
}

// Formats returns the formats of a delivery, built in and registered, by
// file name.
func Formats() []Format {
	mu.RLock()
	out := append(slices.Clone(builtin), registered...)
	mu.RUnlock()
	slices.SortFunc(out, func(a, b Format) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// renderJSON writes the task, its status and its deliverable artifacts.
func renderJSON(w io.Writer, t *Task) error {
	doc := map[string]any{"task_id": t.ID, "workflow": t.Workflow, "status": t.Status, "artifacts": t.Deliverables}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// renderMarkdown writes a report: the task, every step's artifact and
// the deliverables' outputs.
func renderMarkdown(w io.Writer, t *Task) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s — task %s\n\nStatus: **%s**\n\n## Artifacts\n\n| step | producer | attempt | sha256 |\n|---|---|---|---|\n", t.Flow.Name, t.ID, t.Status)
	for _, a := range t.Artifacts {
		fmt.Fprintf(&b, "| %s | %s | %d | `%s` |\n", mdCell(a.StepID), mdCell(a.Producer), a.Attempt, a.SHA256)
	}
	b.WriteString("\n## Deliverables\n")
	for _, a := range t.Deliverables {
		var v any
		if err := json.Unmarshal(a.Output, &v); err != nil {
			return err
		}
		pretty, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintf(&b, "\n### %s\n\n```json\n%s\n```\n", a.StepID, pretty)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// renderCSV writes one row per leaf value of each deliverable: step,
// JSON pointer, value, each cell escaped by csvCell.
func renderCSV(w io.Writer, t *Task) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"step_id", "pointer", "value"}); err != nil {
		return err
	}
	for _, a := range t.Deliverables {
		var v any
		if err := json.Unmarshal(a.Output, &v); err != nil {
			return err
		}
		for _, l := range Leaves(v) {
			if err := cw.Write([]string{csvCell(a.StepID), csvCell(l[0]), csvCell(l[1])}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvCell escapes a cell a spreadsheet would run as a formula (OWASP's
// CSV injection rule): a cell that starts with =, +, -, @, a tab or a
// carriage return gets a leading single quote, so "=HYPERLINK(…)" is
// written '=HYPERLINK(…) and shown as text. A cell that is a JSON number
// ("-5", "-1.5e3") is a number to a spreadsheet too and is left as it is.
// deliverables.json holds the values unaltered.
func csvCell(s string) string {
	if s == "" || !strings.ContainsRune("=+-@\t\r", rune(s[0])) || isJSONNumber(s) {
		return s
	}
	return "'" + s
}

// isJSONNumber reports whether s is one JSON number literal.
func isJSONNumber(s string) bool {
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil && strings.TrimSpace(s) == s
}

// Leaves flattens a JSON value (as encoding/json decodes into any) into
// (JSON pointer, value) pairs: objects by sorted key, scalars as their
// JSON text, strings as themselves.
func Leaves(v any) [][2]string { return leaves(v, "") }

func leaves(v any, at string) [][2]string {
	switch x := v.(type) {
	case map[string]any:
		var out [][2]string
		for _, k := range sortedKeys(x) {
			out = append(out, leaves(x[k], at+"/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"))...)
		}
		return out
	case []any:
		var out [][2]string
		for i, e := range x {
			out = append(out, leaves(e, fmt.Sprintf("%s/%d", at, i))...)
		}
		return out
	case string:
		return [][2]string{{at, x}}
	}
	raw, _ := json.Marshal(v)
	return [][2]string{{at, string(raw)}}
}

// sortedKeys returns m's keys, sorted.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
