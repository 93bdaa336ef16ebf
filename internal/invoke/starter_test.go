package invoke_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// starter is a probe that is also told of each call before it is made,
// and refuses it when refuse is set.
type starter struct {
	probe
	refuse error
	spec   tool.Spec
}

func (s *starter) Starting(rec invoke.Record, spec tool.Spec) error {
	s.stage("start " + rec.Key)
	s.spec = spec
	return s.refuse
}

// TestStarter: a Starter hears of a call after the gate and before the
// tool, with the tool's spec; its error stops the call (classed cancelled
// unless it has a class); an OK record carries the output.
func TestStarter(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		refuse error
		class  fault.Class
		stages string
	}{
		{"allowed", nil, "", "gate start r/s/1 call"},
		{"refused", errors.New("the journal is gone"), fault.Cancelled, "gate start r/s/1"},
		{"refused with a class", fault.New(fault.Conflict, errors.New("lease lost")), fault.Conflict, "gate start r/s/1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := &starter{refuse: c.refuse}
			tl := tool.Func(tool.Spec{Name: "t", Idempotent: true}, func(context.Context, any) (any, error) {
				s.stage("call")
				return map[string]any{"ok": true}, nil
			})
			p := &invoke.Pipeline{Gate: gate{&s.probe, safety.Decision{Verdict: safety.Allow, Reason: "fine"}}}
			out, outcome, err := p.Call(context.Background(), &invoke.Request{Tool: tl, Recorder: s, At: invoke.Position{RunID: "r", StepID: "s", Attempt: 1}})
			if got := strings.Join(s.stages, " "); got != c.stages {
				t.Fatalf("stages %q, want %q", got, c.stages)
			}
			if !s.spec.Idempotent || s.spec.Name != "t" {
				t.Errorf("Starting got spec %+v", s.spec)
			}
			if len(s.records) != 1 {
				t.Fatalf("records %+v", s.records)
			}
			rec := s.records[0]
			if c.refuse == nil {
				if err != nil || outcome != invoke.OK || rec.Output.(map[string]any)["ok"] != true || out.(map[string]any)["ok"] != true {
					t.Fatalf("Call = %v %s %v; record output %v", out, outcome, err, rec.Output)
				}
				return
			}
			if outcome != invoke.Cancelled || fault.ClassOf(err) != c.class || !errors.Is(err, c.refuse) || !strings.Contains(err.Error(), "tool t not called") {
				t.Fatalf("Call = %s [%s] %v, want cancelled [%s]", outcome, fault.ClassOf(err), err, c.class)
			}
			if rec.Outcome != invoke.Cancelled || rec.Output != nil {
				t.Fatalf("record %+v", rec)
			}
		})
	}
}
