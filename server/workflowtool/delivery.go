package workflowtool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/graph"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/value"
)

// Delivery is what prepare_delivery wrote: the folder, the steps whose
// artifacts it renders, and each file with its sha256.
type Delivery struct {
	Dir          string         `json:"dir"`
	Deliverables []string       `json:"deliverables"`
	Files        []DeliveryFile `json:"files"`
}

// DeliveryFile is one file of a delivery.
type DeliveryFile struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
}

// prepareDelivery renders the deliverables of a succeeded task into
// DeliveryDir/<task_id>: deliverables.json, .md, .csv and .xlsx, and
// run.mmd (the flow's Mermaid diagram, each step coloured by its status), then journals the intent to
// deliver (delivery_prepared). The files hold no timestamps: preparing
// the same task again writes the same bytes.
func (w *Workflow) prepareDelivery(ctx context.Context, req *Request) (*Answer, error) {
	t, p, err := w.openTask(ctx, req)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	f := p.Flow
	if t.run.Status != trace.RunSucceeded {
		e := errorf(fault.Business, "/task_id", "task %s is %s: a delivery is prepared once it succeeded", t.run.ID, t.run.Status)
		if !t.run.Finished() {
			e.Message += "; finish next_actions first"
			e.NextActions = nextActions(t, f)
		}
		return nil, e
	}
	ids := f.Deliverables
	if ids == nil {
		ids = f.FinalSteps()
	}
	order, makers := flowMakers(f)
	all := artifacts(t, order, makers, true)
	var arts []Artifact
	for _, id := range ids {
		for _, a := range all {
			if a.StepID == id {
				arts = append(arts, a)
			}
		}
	}
	dir := filepath.Join(w.opts.DeliveryDir, t.run.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, errorf(fault.Transient, "", "prepare the delivery folder: %v", err)
	}
	d := &Delivery{Dir: dir, Deliverables: ids}
	files := []struct {
		name   string
		render func(*bytes.Buffer) error
	}{
		{"deliverables.json", func(b *bytes.Buffer) error { return renderJSON(b, t, arts) }},
		{"deliverables.md", func(b *bytes.Buffer) error { return renderMarkdown(b, t, f, all, arts) }},
		{"deliverables.csv", func(b *bytes.Buffer) error { return renderCSV(b, arts) }},
		{"deliverables.xlsx", func(b *bytes.Buffer) error { return renderXLSX(b, t, arts) }},
		{"run.mmd", func(b *bytes.Buffer) error { return graph.MermaidRun(b, f, statuses(t)) }},
	}
	for _, file := range files {
		var b bytes.Buffer
		if err := file.render(&b); err != nil {
			return nil, errorf(fault.Business, "", "render %s: %v", file.name, err)
		}
		path := filepath.Join(dir, file.name)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return nil, errorf(fault.Transient, "", "write %s: %v", path, err)
		}
		sum := sha256.Sum256(b.Bytes())
		d.Files = append(d.Files, DeliveryFile{Name: file.name, Path: path, SHA256: hex.EncodeToString(sum[:]), Bytes: b.Len()})
	}
	manifest, _ := json.Marshal(d)
	if err := w.journal(ctx, t.run.ID, &trace.Event{Kind: trace.DeliveryPrepared, Preview: dir, OutputSHA: value.Digest(manifest)}); err != nil {
		return nil, err
	}
	a := w.answer(t, f)
	a.Delivery = d
	return a, nil
}

// renderJSON writes the task, its status and its deliverable artifacts.
func renderJSON(b *bytes.Buffer, t *task, arts []Artifact) error {
	doc := map[string]any{"task_id": t.run.ID, "workflow": t.run.Flow, "status": t.run.Status, "artifacts": arts}
	enc := json.NewEncoder(b)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// renderMarkdown writes a report: the task, every step's artifact and
// the deliverables' outputs.
func renderMarkdown(b *bytes.Buffer, t *task, f *flow.Flow, all, arts []Artifact) error {
	fmt.Fprintf(b, "# %s — task %s\n\nStatus: **%s**\n\n## Artifacts\n\n| step | producer | attempt | sha256 |\n|---|---|---|---|\n", f.Name, t.run.ID, t.run.Status)
	for _, a := range all {
		fmt.Fprintf(b, "| %s | %s | %d | `%s` |\n", mdCell(a.StepID), mdCell(a.Producer), a.Attempt, a.SHA256)
	}
	b.WriteString("\n## Deliverables\n")
	for _, a := range arts {
		var v any
		if err := json.Unmarshal(a.Output, &v); err != nil {
			return err
		}
		pretty, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintf(b, "\n### %s\n\n```json\n%s\n```\n", a.StepID, pretty)
	}
	return nil
}

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// renderCSV writes one row per leaf value of each deliverable: step,
// JSON pointer, value.
func renderCSV(b *bytes.Buffer, arts []Artifact) error {
	cw := csv.NewWriter(b)
	if err := cw.Write([]string{"step_id", "pointer", "value"}); err != nil {
		return err
	}
	for _, a := range arts {
		var v any
		if err := json.Unmarshal(a.Output, &v); err != nil {
			return err
		}
		for _, l := range leaves(v, "") {
			if err := cw.Write([]string{a.StepID, l[0], l[1]}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// leaves flattens v into (JSON pointer, value) pairs, objects by sorted
// key, scalars as their JSON text (strings as themselves).
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

// statuses returns each step's status in t.
func statuses(t *task) map[string]string {
	m := make(map[string]string, len(t.steps))
	for _, r := range t.steps {
		m[r.StepID] = string(r.Status)
	}
	return m
}
