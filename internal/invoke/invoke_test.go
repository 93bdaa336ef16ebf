package invoke_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value/schema"
)

func TestKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		at   invoke.Position
		want string
	}{
		{"plain step", invoke.Position{RunID: "r", StepID: "s", Attempt: 2}, "r/s/2"},
		{"for_each item", invoke.Position{RunID: "r", StepID: "s", ForEach: true, Item: 0, Attempt: 1}, "r/s[0]/1"},
		{"repeat round", invoke.Position{RunID: "r", StepID: "s", Round: 3, Attempt: 1}, "r/s#3/1"},
		{"item of a round", invoke.Position{RunID: "r", StepID: "s", ForEach: true, Item: 4, Round: 2, Attempt: 1}, "r/s[4]#2/1"},
		{"fallback", invoke.Position{RunID: "r", StepID: "s", Fallback: true, Attempt: 1}, "r/s/fallback/1"},
		{"fallback of an item", invoke.Position{RunID: "r", StepID: "s", ForEach: true, Item: 1, Fallback: true, Attempt: 1}, "r/s[1]/fallback/1"},
		{"plan step", invoke.Position{RunID: "r", StepID: "s", Attempt: 1, Parent: "r/s[1]/1", Plan: 2, PlanStep: "fetch"}, "r/s[1]/1/plan2/fetch"},
		{"plan step without a parent", invoke.Position{RunID: "r", StepID: "s", Attempt: 1, Plan: 1, PlanStep: "fetch"}, "r/s/1/plan1/fetch"},
		{"plan step outside a run", invoke.Position{Plan: 1, PlanStep: "fetch"}, "plan1/fetch"},
		{"agent call", invoke.Position{RunID: "r", StepID: "a", Attempt: 1, Turn: 3, Call: 2}, "r/a/1/turn3/call2"},
		{"compensation", invoke.Position{RunID: "r", StepID: "s", Parent: "r/s[2]/1", Remedy: "compensate"}, "r/s[2]/1/compensate"},
		{"undo of a plan step", invoke.Position{RunID: "r", StepID: "s", Parent: "r/s/1/plan1/fetch", Remedy: "undo"}, "r/s/1/plan1/fetch/undo"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := c.at.Key(); got != c.want {
				t.Errorf("Key() = %q, want %q", got, c.want)
			}
		})
	}
}

// probe records the pipeline's reports and the order of its stages.
type probe struct {
	mu        sync.Mutex
	stages    []string
	decisions []safety.Decision
	records   []invoke.Record
	late      chan invoke.Record
}

func (l *probe) stage(s string) {
	l.mu.Lock()
	l.stages = append(l.stages, s)
	l.mu.Unlock()
}

func (l *probe) GateDecided(_ invoke.Position, _ *safety.Invocation, d safety.Decision) {
	l.mu.Lock()
	l.decisions = append(l.decisions, d)
	l.mu.Unlock()
}

func (l *probe) Called(rec invoke.Record) {
	l.mu.Lock()
	l.records = append(l.records, rec)
	l.mu.Unlock()
	if rec.Outcome == invoke.Late && l.late != nil {
		l.late <- rec
	}
}

type gate struct {
	l *probe
	d safety.Decision
}

func (g gate) Check(context.Context, *safety.Invocation) (safety.Decision, error) {
	g.l.stage("gate")
	return g.d, nil
}

type validator struct {
	l    *probe
	name string
	s    *schema.Schema
}

func (v validator) Validate(x any) error {
	v.l.stage(v.name)
	return v.s.Validate(x)
}

func mustSchema(t *testing.T, doc string) *schema.Schema {
	t.Helper()
	s, err := schema.Compile("test", json.RawMessage(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStages: the stages run in order, each refusal stops the call with
// its class, and every call leaves a record with its outcome.
func TestStages(t *testing.T) {
	t.Parallel()
	type out struct{ N int } // not a JSON value until normalised
	cases := []struct {
		name    string
		args    any
		verdict safety.Verdict
		fn      func(context.Context, any) (any, error)
		outcome invoke.Outcome
		class   fault.Class
		stages  string
		msg     string
	}{
		{"ok", map[string]any{"n": 1.0}, safety.Allow, func(context.Context, any) (any, error) { return out{N: 1}, nil },
			invoke.OK, "", "args gate call output", ""},
		{"bad args are refused before the gate", map[string]any{}, safety.Allow, nil,
			invoke.InvalidArgs, fault.Business, "args", "args for tool t"},
		{"the gate blocks", map[string]any{"n": 1.0}, safety.Block, nil,
			invoke.Blocked, fault.Policy, "args gate", "policy gate: block on tool t: because"},
		{"require_approval blocks for now", map[string]any{"n": 1.0}, safety.RequireApproval, nil,
			invoke.Blocked, fault.Policy, "args gate", "require_approval on tool t"},
		{"a tool error keeps its class", map[string]any{"n": 1.0}, safety.Allow,
			func(context.Context, any) (any, error) { return nil, fault.TransientErr(errors.New("503")) },
			invoke.Failed, fault.Transient, "args gate call", "tool t: 503"},
		{"a panic is a business error", map[string]any{"n": 1.0}, safety.Allow,
			func(context.Context, any) (any, error) { panic("boom") },
			invoke.Panicked, fault.Business, "args gate call", "tool t: panicked: boom"},
		{"output that is not JSON", map[string]any{"n": 1.0}, safety.Allow,
			func(context.Context, any) (any, error) { return make(chan int), nil },
			invoke.InvalidOutput, fault.Business, "args gate call", "tool t returned"},
		{"output that breaks the schema", map[string]any{"n": 1.0}, safety.Allow,
			func(context.Context, any) (any, error) { return map[string]any{"n": "one"}, nil },
			invoke.InvalidOutput, fault.Business, "args gate call output", "tool t output"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := &probe{}
			p := &invoke.Pipeline{Gate: gate{l, safety.Decision{Verdict: c.verdict, Reason: "because"}}}
			tl := tool.Func(tool.Spec{Name: "t"}, func(ctx context.Context, args any) (any, error) {
				l.stage("call")
				if got := tool.CallInfoFrom(ctx).IdempotencyKey; got != "r/s/1" {
					t.Errorf("the tool got key %q", got)
				}
				return c.fn(ctx, args)
			})
			req := &invoke.Request{Tool: tl, Args: c.args, Recorder: l,
				Input:  validator{l, "args", mustSchema(t, `{"type":"object","required":["n"]}`)},
				Output: validator{l, "output", mustSchema(t, `{"type":"object","properties":{"n":{"type":"number"}}}`)},
				At:     invoke.Position{RunID: "r", StepID: "s", Attempt: 1}}
			got, outcome, err := p.Call(context.Background(), req)
			if outcome != c.outcome || strings.Join(l.stages, " ") != c.stages {
				t.Fatalf("outcome %s after stages %q, want %s after %q (err %v)", outcome, l.stages, c.outcome, c.stages, err)
			}
			if c.class == "" {
				if err != nil || got.(map[string]any)["N"] != 1.0 {
					t.Fatalf("Call = %v, %v", got, err)
				}
			} else if fault.ClassOf(err) != c.class || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = [%s] %v, want [%s] containing %q", fault.ClassOf(err), err, c.class, c.msg)
			}
			if len(l.records) != 1 || l.records[0].Outcome != c.outcome || l.records[0].Key != "r/s/1" || l.records[0].Tool != "t" || !errors.Is(l.records[0].Err, err) {
				t.Fatalf("records %+v", l.records)
			}
			if wantDecisions := strings.Count(c.stages, "gate"); len(l.decisions) != wantDecisions {
				t.Fatalf("%d decisions recorded, want %d", len(l.decisions), wantDecisions)
			}
		})
	}
}

// TestAllowAllIsNotConsulted: the default gate is skipped, and no decision
// is recorded for it.
func TestAllowAllIsNotConsulted(t *testing.T) {
	t.Parallel()
	l := &probe{}
	tl := tool.Func(tool.Spec{Name: "t"}, func(context.Context, any) (any, error) { return true, nil })
	for _, g := range []safety.Gate{nil, safety.AllowAll} {
		p := &invoke.Pipeline{Gate: g}
		if _, outcome, err := p.Call(context.Background(), &invoke.Request{Tool: tl, Recorder: l}); err != nil || outcome != invoke.OK {
			t.Fatalf("Call: %s %v", outcome, err)
		}
	}
	if len(l.decisions) != 0 || len(l.records) != 2 {
		t.Fatalf("decisions %v records %d", l.decisions, len(l.records))
	}
}

// TestDeadlineOfAToolThatIgnoresItsContext: the call returns at the
// deadline with the context's cause; the tool's later result is recorded
// as Late and never returned.
func TestDeadlineOfAToolThatIgnoresItsContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	l := &probe{late: make(chan invoke.Record, 1)}
	tl := tool.Func(tool.Spec{Name: "slow"}, func(context.Context, any) (any, error) {
		<-release // the context is ignored
		return "late", nil
	})
	cause := fault.TransientErr(errors.New("timed out after 50ms (the step's timeout)"))
	ctx, cancel := context.WithTimeoutCause(context.Background(), 50*time.Millisecond, cause)
	defer cancel()
	out, outcome, err := (&invoke.Pipeline{}).Call(ctx, &invoke.Request{Tool: tl, Recorder: l, At: invoke.Position{RunID: "r", StepID: "s", Attempt: 1}})
	close(release)
	if out != nil || outcome != invoke.TimedOut || !errors.Is(err, cause) || fault.ClassOf(err) != fault.Transient ||
		!strings.Contains(err.Error(), "tool slow: timed out after 50ms") || !strings.Contains(err.Error(), "discarded") {
		t.Fatalf("Call = %v, %s, %v", out, outcome, err)
	}
	select {
	case rec := <-l.late:
		if rec.Key != "r/s/1" || rec.Err != nil || rec.Abandoned {
			t.Errorf("late record %+v", rec)
		}
	case <-time.After(time.Minute):
		t.Fatal("no late record")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.records) != 2 || l.records[0].Outcome != invoke.TimedOut || !l.records[0].Abandoned {
		t.Fatalf("records %+v", l.records)
	}
}

// TestDeadlineOfAToolThatHonoursItsContext: a tool that returns its
// context's error is a timed-out call, not an abandoned one.
func TestDeadlineOfAToolThatHonoursItsContext(t *testing.T) {
	t.Parallel()
	l := &probe{}
	tl := tool.Func(tool.Spec{Name: "polite"}, func(ctx context.Context, _ any) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, outcome, err := (&invoke.Pipeline{}).Call(ctx, &invoke.Request{Tool: tl, Recorder: l})
	if outcome != invoke.TimedOut || !errors.Is(err, context.DeadlineExceeded) || fault.ClassOf(err) != fault.Transient {
		t.Fatalf("Call = %s, %v", outcome, err)
	}
}

// TestPremiseStage: a tool whose spec declares a premise has it checked on
// every output after the output schema: one that contradicts it is
// Outcome PremiseFailed with a *tool.PremiseError (business) naming the
// premise, the output returned beside it and kept in the record (the call
// was made); one that holds is OK; a check that cannot be evaluated counts
// as not holding.
func TestPremiseStage(t *testing.T) {
	t.Parallel()
	holds := func(_ context.Context, out, args any) (bool, error) {
		o, _ := out.(map[string]any)
		if o["region"] == nil {
			return false, errors.New("no field region")
		}
		return o["region"] != "" && args.(map[string]any)["customer"] == "ann", nil
	}
	p := &invoke.Pipeline{}
	for _, c := range []struct {
		out     map[string]any
		outcome invoke.Outcome
		msg     string
	}{
		{map[string]any{"region": "eu"}, invoke.OK, ""},
		{map[string]any{"region": ""}, invoke.PremiseFailed, `premise region-known ("a region") does not hold on the output of a call of tool lookup (check "output.region != \"\"")`},
		{map[string]any{}, invoke.PremiseFailed, "could not be evaluated on the call's output, so it counts as not holding: no field region"},
	} {
		l := &probe{}
		spec := tool.Spec{Name: "lookup", Premise: &tool.Premise{ID: "region-known", Claim: "a region", Check: `output.region != ""`, Holds: holds}}
		tl := tool.Func(spec, func(context.Context, any) (any, error) { return c.out, nil })
		got, outcome, err := p.Call(context.Background(), &invoke.Request{Tool: tl, Args: map[string]any{"customer": "ann"}, Recorder: l,
			At: invoke.Position{RunID: "r", StepID: "s", Attempt: 1}})
		if outcome != c.outcome || !outcome.Returned() {
			t.Fatalf("output %v: outcome %s, want %s (err %v)", c.out, outcome, c.outcome, err)
		}
		if c.msg == "" {
			if err != nil {
				t.Fatalf("output %v: %v", c.out, err)
			}
			continue
		}
		pe := tool.AsPremise(err)
		if pe == nil || fault.ClassOf(err) != fault.Business || !strings.Contains(err.Error(), c.msg) || pe.Premise.ID != "region-known" {
			t.Fatalf("output %v: err [%s] %v, want a business *tool.PremiseError containing %q", c.out, fault.ClassOf(err), err, c.msg)
		}
		if got == nil || len(l.records) != 1 || l.records[0].Outcome != invoke.PremiseFailed || l.records[0].Output == nil {
			t.Fatalf("output %v: returned %v, records %+v: the call was made, its output is kept", c.out, got, l.records)
		}
	}
}
