package workflowtool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/server/workflowtool/delivery"
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
// DeliveryDir/<task_id>, one file per delivery.Formats (deliverables.json,
// .md, .csv, run.mmd — the flow's Mermaid diagram, each step coloured by
// its status — and deliverables.xlsx when delivery/xlsx is imported), then
// journals the intent to deliver (delivery_prepared). The files hold no
// timestamps: preparing the same task again writes the same bytes.
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
	ids := deliverables(f)
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
	in := &delivery.Task{
		ID: t.run.ID, Workflow: t.run.Flow, Status: t.run.Status, Flow: f,
		Statuses: statuses(t), Artifacts: toDelivery(all), Deliverables: toDelivery(arts),
	}
	for _, format := range delivery.Formats() {
		var b bytes.Buffer
		if err := format.Render(&b, in); err != nil {
			return nil, errorf(fault.Business, "", "render %s: %v", format.Name, err)
		}
		path := filepath.Join(dir, format.Name)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return nil, errorf(fault.Transient, "", "write %s: %v", path, err)
		}
		sum := sha256.Sum256(b.Bytes())
		d.Files = append(d.Files, DeliveryFile{Name: format.Name, Path: path, SHA256: hex.EncodeToString(sum[:]), Bytes: b.Len()})
	}
	manifest, _ := json.Marshal(d)
	if err := w.journal(ctx, t.run.ID, &trace.Event{Kind: trace.DeliveryPrepared, Preview: dir, OutputSHA: value.Digest(manifest)}); err != nil {
		return nil, err
	}
	a := w.answer(t, f)
	a.Delivery = d
	return a, nil
}

// toDelivery converts artifacts to what package delivery renders (the
// same fields).
func toDelivery(arts []Artifact) []delivery.Artifact {
	out := make([]delivery.Artifact, len(arts))
	for i, a := range arts {
		out[i] = delivery.Artifact(a)
	}
	return out
}

// statuses returns each step's status in t.
func statuses(t *task) map[string]string {
	m := make(map[string]string, len(t.steps))
	for _, r := range t.steps {
		m[r.StepID] = string(r.Status)
	}
	return m
}
