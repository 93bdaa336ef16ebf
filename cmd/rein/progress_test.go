package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

func progressFlow(t *testing.T) *flow.Flow {
	t.Helper()
	f, err := flow.Parse([]byte("name: p\nsteps:\n  - {id: fetch, tool: t, args: {}}\n  - {id: save, tool: t, args: {}}\n"), "p.yaml",
		&flow.Options{Tools: func(n string) (tool.Spec, bool) { return tool.Spec{Name: n}, true }})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestProgressLinesWhenNotATerminal(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := newProgress(&buf, progressFlow(t))
	if p.live {
		t.Fatal("a buffer is not a terminal")
	}
	p.Start()
	p.Emit(context.Background(), &trace.Event{Kind: trace.StepStarted, StepID: "fetch", Status: "running"})
	p.Emit(context.Background(), &trace.Event{Kind: trace.AttemptFailed, StepID: "fetch", Attempt: 1, ErrorClass: "transient", Origin: trace.OriginTool, Error: "503"})
	p.Emit(context.Background(), &trace.Event{Kind: trace.RiskTier, StepID: "fetch", Decision: "tier 3",
		Data: `{"tier":3,"from":2,"stage":"step","reasons":["effect: tool purge is destructive (tier 3)"]}`})
	p.Stop()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "attempt_failed") || !strings.Contains(lines[1], "[transient/tool] 503") {
		t.Fatalf("want one line per event, got:\n%s", buf.String())
	}
	if !strings.HasSuffix(lines[2], "risk_tier      fetch tier 3 (step: effect: tool purge is destructive (tier 3))") {
		t.Errorf("risk_tier line %q", lines[2])
	}
}

func TestProgressLiveRedrawsInPlace(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := newProgress(&buf, progressFlow(t))
	p.live = true // as on a terminal
	p.Start()
	p.Emit(context.Background(), &trace.Event{Kind: trace.StepStarted, StepID: "fetch", Status: "running"})
	p.Emit(context.Background(), &trace.Event{Kind: trace.StepSettled, StepID: "fetch", Status: "succeeded", DurationMS: 12})
	p.Stop()
	out := buf.String()
	if !strings.Contains(out, "\x1b[2A") {
		t.Fatal("the live view does not move the cursor back over its rows")
	}
	last := out[strings.LastIndex(out, "\x1b[2A"):]
	if !strings.Contains(last, "✓ fetch") || !strings.Contains(last, "succeeded") || !strings.Contains(last, "save") || !strings.Contains(last, "pending") {
		t.Fatalf("final frame lacks the step states:\n%q", last)
	}
}
