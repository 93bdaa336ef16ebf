package slogsink

import (
	"context"
	"log/slog"
	"time"

	"github.com/reinhq/rein/trace"
)

// Sink is a [trace.Sink] that logs events to a *slog.Logger. It is safe for
// concurrent use if the logger's handler is (the standard ones are).
type Sink struct {
	l *slog.Logger
}

var _ trace.Borrower = (*Sink)(nil)

// BorrowsEvents marks the sink as a [trace.Borrower]: Emit keeps nothing of
// the event once it returns.
func (*Sink) BorrowsEvents() {}

// New returns a Sink logging to l; a nil l means slog.Default() at the time
// of each Emit.
func New(l *slog.Logger) *Sink {
	return &Sink{l: l}
}

// Level is the level at which Emit logs e: Warn for attempt_failed and
// call_discarded, Error for a failed step or run settling, Info otherwise.
func Level(e *trace.Event) slog.Level {
	switch e.Kind {
	case trace.AttemptFailed, trace.CallDiscarded:
		return slog.LevelWarn
	case trace.StepSettled, trace.RunSettled:
		if e.Status == string(trace.RunFailed) || e.Status == "compensation_failed" {
			return slog.LevelError
		}
	}
	return slog.LevelInfo
}

// Emit logs e if the logger is enabled at Level(e). The record carries the
// event's time (now, if the event has none) and no source position: it is
// built directly rather than through Logger.LogAttrs, which would stamp the
// time of the call and pay for runtime.Callers. Handler errors are ignored,
// as slog itself does.
func (s *Sink) Emit(ctx context.Context, e *trace.Event) {
	l := s.l
	if l == nil {
		l = slog.Default()
	}
	h := l.Handler()
	level := Level(e)
	if !h.Enabled(ctx, level) {
		return
	}
	t := e.Time
	if t.IsZero() {
		t = time.Now()
	}
	r := slog.NewRecord(t, level, string(e.Kind), 0)
	var buf [22]slog.Attr
	r.AddAttrs(appendAttrs(buf[:0], e)...)
	_ = h.Handle(ctx, r)
}

// appendAttrs appends the non-zero fields of e (seq and run_id always),
// except time and kind, which are the record's time and message.
func appendAttrs(a []slog.Attr, e *trace.Event) []slog.Attr {
	a = append(a, slog.Int64("seq", e.Seq), slog.String("run_id", e.RunID))
	a = str(a, "flow", e.Flow)
	a = str(a, "step_id", e.StepID)
	a = str(a, "step_type", e.StepType)
	a = num(a, "attempt", int64(e.Attempt))
	a = str(a, "status", e.Status)
	if e.DurationMS != 0 {
		a = append(a, slog.Float64("duration_ms", e.DurationMS))
	}
	a = str(a, "model", e.Model)
	a = str(a, "tool", e.Tool)
	a = num(a, "tokens_in", int64(e.TokensIn))
	a = num(a, "tokens_out", int64(e.TokensOut))
	a = str(a, "error_class", e.ErrorClass)
	a = str(a, "error", e.Error)
	a = str(a, "origin", string(e.Origin))
	a = str(a, "budget", e.Budget)
	a = str(a, "decision", e.Decision)
	a = str(a, "input_sha256", e.InputSHA)
	a = str(a, "output_sha256", e.OutputSHA)
	a = str(a, "preview", e.Preview)
	return a
}

func str(a []slog.Attr, key, v string) []slog.Attr {
	if v == "" {
		return a
	}
	return append(a, slog.String(key, v))
}

func num(a []slog.Attr, key string, v int64) []slog.Attr {
	if v == 0 {
		return a
	}
	return append(a, slog.Int64(key, v))
}
