package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// progress is the trace sink that shows a run on stderr: on a terminal a
// live list of steps with their state and elapsed time, redrawn in place;
// otherwise one line per event.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	live  bool
	flow  *flow.Flow
	rows  map[string]*progressRow
	drawn int
	start time.Time
	stop  chan struct{}
	done  chan struct{}
}

type progressRow struct {
	status   string
	attempt  int
	started  time.Time
	duration time.Duration
	note     string
}

func newProgress(w io.Writer, f *flow.Flow) *progress {
	p := &progress{w: w, flow: f, rows: map[string]*progressRow{}}
	if file, ok := w.(*os.File); ok && term.IsTerminal(int(file.Fd())) && os.Getenv("TERM") != "dumb" {
		p.live = true
	}
	for _, s := range f.Steps {
		p.rows[s.ID] = &progressRow{status: string(trace.StepPending)}
	}
	return p
}

// Start begins redrawing the live view (no-op when not on a terminal).
func (p *progress) Start() {
	p.start = time.Now()
	if !p.live {
		return
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.mu.Lock()
				p.redraw()
				p.mu.Unlock()
			case <-p.stop:
				return
			}
		}
	}()
}

// Stop ends the live view with a final drawing.
func (p *progress) Stop() {
	if !p.live {
		return
	}
	close(p.stop)
	<-p.done
	p.mu.Lock()
	p.redraw()
	p.mu.Unlock()
}

// BorrowsEvents marks progress as a trace.Borrower: Emit keeps nothing of
// the event once it returns.
func (*progress) BorrowsEvents() {}

// Emit implements trace.Sink.
func (p *progress) Emit(_ context.Context, e *trace.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if row := p.rows[e.StepID]; row != nil {
		switch e.Kind {
		case trace.StepStarted:
			row.status, row.started = e.Status, time.Now()
		case trace.AttemptFailed:
			row.attempt = e.Attempt
			row.note = fmt.Sprintf("attempt %d failed (%s)", e.Attempt, e.ErrorClass)
		case trace.CorrectiveRetry:
			row.note = fmt.Sprintf("attempt %d: reply rejected, asking once more", e.Attempt)
		case trace.ApprovalRequested:
			row.status, row.note = e.Status, "waiting for a person ("+e.Decision+")"
		case trace.StepSettled:
			row.status, row.duration = e.Status, e.Duration()
			row.note = ""
			if e.Error != "" {
				row.note = runs.Clip(e.Error, 60)
			}
		}
	}
	if p.live {
		p.redraw()
		return
	}
	p.line(e)
}

func (p *progress) line(e *trace.Event) {
	var b strings.Builder
	fmt.Fprintf(&b, "%7.3fs %-14s", time.Since(p.start).Seconds(), e.Kind)
	if e.StepID != "" {
		fmt.Fprintf(&b, " %s", e.StepID)
	}
	if e.PlanStep != "" {
		fmt.Fprintf(&b, "/%s", e.PlanStep)
	}
	if e.Tool != "" && e.PlanStep != "" {
		fmt.Fprintf(&b, " tool=%s", e.Tool)
	}
	if e.Decision != "" && e.Kind == trace.ModelCall {
		fmt.Fprintf(&b, " decision=%s", e.Decision)
	}
	if e.Status != "" {
		fmt.Fprintf(&b, " %s", e.Status)
	}
	if e.Attempt > 0 && e.PlanStep == "" {
		fmt.Fprintf(&b, " attempt=%d", e.Attempt)
	} else if e.Attempt > 0 {
		fmt.Fprintf(&b, " plan=%d", e.Attempt)
	}
	if e.Kind == trace.ToolProcess {
		fmt.Fprintf(&b, " pgid=%d", e.Process.PGID)
	}
	if e.Kind == trace.RiskTier || e.Kind == trace.ReviewDone {
		fmt.Fprintf(&b, " %s", e.Decision)
		if c, err := journal.DecodeTierChange(e.Data); err == nil && e.Kind == trace.RiskTier && len(c.Reasons) > 0 {
			fmt.Fprintf(&b, " (%s: %s)", c.Stage, runs.Clip(c.Reasons[0], 120))
		}
	}
	if e.Model != "" && e.Kind == trace.ModelCall {
		fmt.Fprintf(&b, " model=%s tokens=%d/%d", e.Model, e.TokensIn, e.TokensOut)
	}
	if e.DurationMS > 0 {
		fmt.Fprintf(&b, " %s", e.Duration().Round(time.Microsecond))
	}
	if e.ErrorClass != "" {
		fmt.Fprintf(&b, " [%s/%s] %s", e.ErrorClass, e.Origin, runs.Clip(e.Error, 200))
	}
	fmt.Fprintln(p.w, printable(b.String()))
}

func (p *progress) redraw() {
	var b strings.Builder
	if p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", p.drawn)
	}
	for _, s := range p.flow.Steps {
		row := p.rows[s.ID]
		elapsed := row.duration
		if row.status == string(trace.StepRunning) {
			elapsed = time.Since(row.started)
		}
		t := ""
		if elapsed > 0 || row.status == string(trace.StepRunning) {
			t = elapsed.Round(10 * time.Millisecond).String()
		}
		fmt.Fprintf(&b, "\x1b[2K%s %-24s %-10s %8s  %s\n", symbol(row.status), printable(s.ID), row.status, t, printable(row.note))
	}
	p.drawn = len(p.flow.Steps)
	_, _ = io.WriteString(p.w, b.String()) // a terminal that stopped taking output: nothing to do
}

func symbol(status string) string {
	switch trace.StepStatus(status) {
	case trace.StepSucceeded:
		return "✓"
	case trace.StepDefaulted, trace.StepFellBack:
		return "~"
	case trace.StepSkipped:
		return "-"
	case trace.StepFailed, trace.StepBlocked:
		return "✗"
	case trace.StepRunning:
		return "▶"
	case trace.StepWaiting, trace.StepUnknown:
		return "?"
	}
	return " "
}

// seed shows the steps a resumed run already has in their journaled state.
func (p *progress) seed(steps []*store.Step) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, st := range steps {
		if row := p.rows[st.StepID]; row != nil {
			row.status, row.attempt = string(st.Status), st.Attempt
			if !st.SettledAt.IsZero() {
				row.duration = st.SettledAt.Sub(st.StartedAt)
			}
		}
	}
}
