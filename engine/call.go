package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
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

// callLLM makes one model call: budgets, the request (with the corrective
// turn when corr is set), usage accounting, and the strict parse of the
// reply. It returns the raw text so a format error can be corrected.
func (r *run) callLLM(ctx context.Context, j *job, m model.Model, name string, in unitInput, attempt int, corr *correction) (any, string, error) {
	s := j.step
	if err := r.countLLMCall(); err != nil {
		return nil, "", err
	}
	req := &model.Request{Model: name, RunID: r.id, StepID: s.ID, Attempt: attempt, Corrective: corr != nil}
	if s.OutputSchema != nil {
		req.Schema = s.OutputSchema.JSON()
		req.Messages = append(req.Messages, model.Message{Role: model.System,
			Content: "Reply with one JSON value only, no prose, that satisfies this JSON Schema: " + string(req.Schema)})
	}
	req.Messages = append(req.Messages, model.Message{Role: model.User, Content: in.prompt})
	if corr != nil {
		req.Messages = append(req.Messages,
			model.Message{Role: model.Assistant, Content: corr.raw},
			model.Message{Role: model.User, Content: correctionPrompt(corr)})
	}
	start := r.e.cfg.Clock.Now()
	resp, err := m.Generate(ctx, req)
	ev := trace.Event{Kind: trace.ModelCall, StepID: s.ID, StepType: string(s.Type), Attempt: attempt, Model: name,
		DurationMS: r.e.cfg.Clock.Now().Sub(start).Milliseconds(), Status: "ok"}
	if resp != nil {
		ev.TokensIn, ev.TokensOut = resp.Usage.In, resp.Usage.Out
		if resp.Model != "" {
			ev.Model = resp.Model
		}
	}
	if err != nil {
		ev.Status, ev.ErrorClass, ev.Error, ev.Origin = "failed", string(fault.ClassOf(err)), err.Error(), trace.OriginModel
	}
	r.record(ev)
	if resp != nil {
		if err := r.countTokens(resp.Usage); err != nil {
			return nil, "", err
		}
	}
	if err != nil {
		return nil, "", fmt.Errorf("model %s: %w", name, err)
	}
	out, perr := parseReply(resp.Text, s)
	if perr != nil {
		return nil, resp.Text, fault.FormatErr(fmt.Errorf("model %s: %w", name, perr))
	}
	return out, resp.Text, nil
}

// parseReply turns a model's text into the step's output: without an
// output_schema the text itself; with one, exactly one JSON value (a
// ```json fence around it is tolerated) that satisfies the schema.
func parseReply(text string, s *flow.Step) (any, error) {
	if s.OutputSchema == nil {
		return text, nil
	}
	body := strings.TrimSpace(text)
	if strings.HasPrefix(body, "```") {
		body = strings.TrimPrefix(body, "```json")
		body = strings.TrimPrefix(body, "```")
		body = strings.TrimSuffix(strings.TrimSpace(body), "```")
	}
	dec := json.NewDecoder(strings.NewReader(body))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("reply is not JSON (%v): %s", err, fragment(body, 0))
	}
	if dec.More() {
		off := int(dec.InputOffset())
		return nil, fmt.Errorf("reply holds more than one JSON value: extra text %s", fragment(body, off))
	}
	if err := s.OutputSchema.Validate(v); err != nil {
		return nil, fmt.Errorf("reply %w", err)
	}
	return v, nil
}

// fragment quotes up to 80 bytes of s from off.
func fragment(s string, off int) string {
	if off > len(s) {
		off = len(s)
	}
	s = s[off:]
	if len(s) > 80 {
		cut := 80
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strconv.Quote(s)
}

func correctionPrompt(c *correction) string {
	return "Your previous reply was rejected: " + c.err.Error() +
		"\nReply again with only the corrected JSON value, no prose."
}
