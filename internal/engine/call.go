package engine

import (
	"context"
	"fmt"
	"strconv"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// callTool makes one tool call through the invocation pipeline (package
// invoke): args schema, gate, idempotency key, call, normalise, the step's
// output schema, call record. The origin is the engine's when the call was
// refused (args or gate), the tool's otherwise.
func (r *run) callTool(ctx context.Context, j *job, t tool.Tool, in unitInput, attempt int, fallback bool) (any, trace.Origin, error) {
	s := j.step
	req := invoke.Request{Tool: t, Args: in.args,
		At: invoke.Position{RunID: r.id, StepID: s.ID, ForEach: in.item >= 0, Item: in.item, Round: in.round, Fallback: fallback, Attempt: attempt}}
	if !fallback {
		req.Spec = &r.b.specs[j.index]
		req.Approved = j.approved
	}
	req.Recorder = r.recorder(ctx, req.Spec)
	req.Provenance = r.b.provenance(j.index, fallback)
	if r.ev != nil {
		req.Verified = r.ev.Verify(in.args, req.Provenance)
	}
	if r.b.gated() {
		req.Gate = r.b.gate // the flow's rules and the controls around the engine's gate
	}
	if sch := r.b.inputSchema(j.index, fallback); sch != nil {
		req.Input = sch
	}
	if s.OutputSchema != nil {
		req.Output = s.OutputSchema
	}
	out, outcome, err := r.e.pipe.Call(ctx, &req)
	if err != nil {
		if outcome == invoke.InvalidArgs || outcome == invoke.Blocked {
			return nil, trace.OriginEngine, err
		}
		return nil, trace.OriginTool, err
	}
	return out, trace.OriginTool, nil
}

// callLLM asks the step's model. With an output_schema it goes through
// model.Decide: one JSON value, validated, and one corrective request
// carrying the validation errors before it is a format error. Without one
// the reply's text is the output. Every exchange is budgeted and traced by
// the metered model.
func (r *run) callLLM(ctx context.Context, j *job, m model.Model, name string, in unitInput, attempt int, fallback bool) (out any, err error) {
	s := j.step
	sc := &callScope{r: r, step: s, index: j.index, attempt: attempt}
	switch {
	case in.item >= 0:
		sc.unit = "i" + strconv.Itoa(in.item)
	case in.round > 0:
		sc.unit = "r" + strconv.Itoa(in.round)
	}
	if fallback {
		sc.unit += "f"
	}
	ctx = withoutDeltas(withScope(ctx, sc), s.Guardrails)
	if r.d.on && in.item >= 0 {
		// a for_each item's output is recorded (callrec.go).
		start := r.e.cfg.Clock.Now()
		defer func() { r.recordModelCall(j, name, in, attempt, fallback, start, sc, out, err) }()
	}
	mm := metered{name: name, m: m}
	g := &llmGuard{r: r, j: j, m: mm, name: name, attempt: attempt, plain: in.item < 0 && in.round == 0 && !fallback}
	if g.plain {
		g.gr = r.takeGuards(j.index) // the decisions on its trips (guardwait.go)
	}
	if len(s.Guardrails) > 0 {
		trips, settled, err := g.check(ctx, true, in.prompt, nil)
		switch {
		case err != nil:
			return nil, err
		case settled != nil:
			return settledOutput(s, settled)
		case len(trips) > 0:
			return nil, g.wait(trips, nil, nil)
		}
	}
	text, v, err := r.askLLM(ctx, j, mm, name, in, attempt, g.gr)
	if err != nil {
		return nil, err
	}
	if len(s.Guardrails) > 0 {
		trips, settled, err := g.check(ctx, false, text, v)
		switch {
		case err != nil:
			return nil, err
		case settled != nil:
			return settledOutput(s, settled)
		case len(trips) > 0:
			return nil, g.wait(trips, &text, v)
		}
	}
	if s.OutputSchema == nil {
		return text, nil
	}
	return v, nil
}

// askLLM makes the model call of an llm step: the reply's text, and with
// an output_schema its JSON value (through model.Decide). A reply an
// output guardrail tripped on and a person approved (gr) is taken as it
// was recorded, without asking the model again.
func (r *run) askLLM(ctx context.Context, j *job, mm metered, name string, in unitInput, attempt int, gr *guardResume) (string, any, error) {
	s := j.step
	if gr != nil && gr.rec.Reply != nil {
		return gr.rec.Reply.Text, gr.rec.Reply.Value, nil
	}
	req := &model.Request{Model: name, RunID: r.id, StepID: s.ID, Attempt: attempt,
		Messages: []model.Message{{Role: model.User, Content: in.prompt}}}
	if s.OutputSchema == nil {
		resp, err := mm.Generate(ctx, req)
		if err != nil {
			return "", nil, fmt.Errorf("model %s: %w", name, err)
		}
		if resp == nil {
			return "", nil, fault.BusinessErr(fmt.Errorf("model %s returned no response", name))
		}
		return resp.Text, nil, nil
	}
	d, err := model.Decide(ctx, mm, req, model.DecideOptions[any]{Schema: s.OutputSchema,
		OnReject: func(_ int, problems error) {
			// a corrective retry within this attempt, not a failed attempt.
			r.recordCorrection(j, attempt, in.item, fmt.Errorf("model %s: reply rejected, asking once more: %w", name, problems))
		}})
	if err != nil {
		return "", nil, fmt.Errorf("model %s: %w", name, err)
	}
	return d.Text, d.Value, nil
}
