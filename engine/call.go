package engine

import (
	"bytes"
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/value"
)

// callTool passes one invocation through the gate and calls the tool. Panics
// become business errors; the output is normalised to JSON values and checked
// against the step's output schema.
func (r *run) callTool(ctx context.Context, j *job, t tool.Tool, in unitInput, attempt int, fallback bool) (any, trace.Origin, error) {
	s := j.step
	spec := &r.b.specs[j.index]
	if fallback {
		fs := t.Spec()
		spec = &fs
	}
	if err := r.checkPolicy(ctx, s.ID, attempt, spec, in.args); err != nil {
		return nil, trace.OriginEngine, err
	}
	var kb [96]byte
	key := append(kb[:0], r.id...)
	key = append(append(key, '/'), s.ID...)
	if in.item >= 0 {
		key = strconv.AppendInt(append(key, '['), int64(in.item), 10)
		key = append(key, ']')
	}
	if in.round > 0 {
		key = strconv.AppendInt(append(key, '#'), int64(in.round), 10)
	}
	if fallback {
		key = append(key, "/fallback"...)
	}
	key = strconv.AppendInt(append(key, '/'), int64(attempt), 10)
	ctx = tool.WithCallInfo(ctx, &tool.CallInfo{RunID: r.id, StepID: s.ID, Attempt: attempt, IdempotencyKey: string(key)})
	if spec.InputSchema != nil {
		if sch := r.b.inputSchema(j.index, fallback); sch != nil {
			if err := sch.Validate(in.args); err != nil {
				return nil, trace.OriginEngine, fault.BusinessErr(fmt.Errorf("args for tool %s %w", spec.Name, err))
			}
		}
	}
	out, err := safeCall(ctx, t, in.args)
	if err != nil {
		if !strings.HasPrefix(err.Error(), "tool "+spec.Name+":") {
			err = fmt.Errorf("tool %s: %w", spec.Name, err)
		}
		return nil, trace.OriginTool, err
	}
	if out, err = value.Normalize(out); err != nil {
		return nil, trace.OriginTool, fault.BusinessErr(fmt.Errorf("tool %s returned %w", spec.Name, err))
	}
	if s.OutputSchema != nil {
		if err := s.OutputSchema.Validate(out); err != nil {
			return nil, trace.OriginTool, fault.BusinessErr(fmt.Errorf("tool %s output %w", spec.Name, err))
		}
	}
	return out, trace.OriginTool, nil
}

// checkPolicy asks the gate about one invocation; anything but allow is a
// policy error. The default gate is skipped outright.
func (r *run) checkPolicy(ctx context.Context, step string, attempt int, spec *tool.Spec, args any) error {
	if r.e.cfg.Gate == safety.AllowAll {
		return nil
	}
	inv := safety.Invocation{RunID: r.id, StepID: step, Attempt: attempt, Tool: *spec, Args: args}
	d, err := r.e.cfg.Gate.Check(ctx, &inv)
	if err != nil {
		return fault.New(fault.Policy, fmt.Errorf("policy gate failed on tool %s: %w", spec.Name, err))
	}
	if d.Verdict != safety.Allow && d.Verdict != "" {
		r.record(trace.Event{Kind: trace.GateDecision, StepID: step, Tool: spec.Name, Attempt: attempt, Decision: string(d.Verdict), Error: d.Reason})
		msg := fmt.Sprintf("policy gate: %s on tool %s: %s", d.Verdict, spec.Name, d.Reason)
		if d.Verdict != safety.Block {
			msg += " (approvals and reviews arrive with durable runs; until then this blocks)"
		}
		return fault.Errorf(fault.Policy, "%s", msg)
	}
	return nil
}

func safeCall(ctx context.Context, t tool.Tool, args any) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fault.Errorf(fault.Business, "panicked: %v\n%s", p, firstLines(debug.Stack(), 12))
		}
	}()
	return t.Call(ctx, args)
}

func firstLines(b []byte, n int) string {
	lines := bytes.SplitN(b, []byte("\n"), n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// callLLM asks the step's model. With an output_schema it goes through
// model.Decide: one JSON value, validated, and one corrective request
// carrying the validation errors before it is a format error. Without one
// the reply's text is the output. Every exchange is budgeted and traced by
// the metered model.
func (r *run) callLLM(ctx context.Context, j *job, m model.Model, name string, in unitInput, attempt int) (any, error) {
	s := j.step
	ctx = withScope(ctx, &callScope{r: r, step: s, index: j.index, attempt: attempt})
	mm := metered{name: name, m: m}
	req := &model.Request{Model: name, RunID: r.id, StepID: s.ID, Attempt: attempt,
		Messages: []model.Message{{Role: model.User, Content: in.prompt}}}
	if s.OutputSchema == nil {
		resp, err := mm.Generate(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", name, err)
		}
		if resp == nil {
			return nil, fault.BusinessErr(fmt.Errorf("model %s returned no response", name))
		}
		return resp.Text, nil
	}
	d, err := model.Decide(ctx, mm, req, model.DecideOptions[any]{Schema: s.OutputSchema,
		OnReject: func(_ int, problems error) {
			// a corrective retry within this attempt, not a failed attempt.
			r.recordCorrection(j, attempt, in.item, fmt.Errorf("model %s: reply rejected, asking once more: %w", name, problems))
		}})
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", name, err)
	}
	return d.Value, nil
}
