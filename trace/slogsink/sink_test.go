package slogsink

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/reinhq/rein/trace"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

var t0 = time.Date(2026, 3, 14, 9, 26, 53, 589000000, time.UTC)

func TestEmit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		e     trace.Event
		level string
		attrs map[string]any // besides time, level, msg
	}{
		{
			"run started is info with the always-present fields",
			trace.Event{Seq: 1, Time: t0, Kind: trace.RunStarted, RunID: "r1", Flow: "triage"},
			"INFO", map[string]any{"seq": 1.0, "run_id": "r1", "flow": "triage"},
		},
		{
			"zero fields are left out but seq and run_id stay",
			trace.Event{Time: t0, Kind: trace.StepStarted, StepID: "a"},
			"INFO", map[string]any{"seq": 0.0, "run_id": "", "step_id": "a"},
		},
		{
			"attempt failed is a warning",
			trace.Event{Seq: 4, Time: t0, Kind: trace.AttemptFailed, RunID: "r1", StepID: "fetch", Attempt: 1,
				ErrorClass: "transient", Error: "connection reset", Origin: trace.OriginTool, Tool: "http.get"},
			"WARN", map[string]any{"seq": 4.0, "run_id": "r1", "step_id": "fetch", "attempt": 1.0,
				"error_class": "transient", "error": "connection reset", "origin": "tool", "tool": "http.get"},
		},
		{
			"failed step is an error",
			trace.Event{Seq: 5, Time: t0, Kind: trace.StepSettled, RunID: "r1", StepID: "fetch", Status: "failed", DurationMS: 30},
			"ERROR", map[string]any{"seq": 5.0, "run_id": "r1", "step_id": "fetch", "status": "failed", "duration_ms": 30.0},
		},
		{
			"succeeded step is info",
			trace.Event{Seq: 6, Time: t0, Kind: trace.StepSettled, RunID: "r1", StepID: "b", Status: "skipped"},
			"INFO", map[string]any{"seq": 6.0, "run_id": "r1", "step_id": "b", "status": "skipped"},
		},
		{
			"failed run is an error",
			trace.Event{Seq: 9, Time: t0, Kind: trace.RunSettled, RunID: "r1", Status: "failed", Budget: "max_tokens"},
			"ERROR", map[string]any{"seq": 9.0, "run_id": "r1", "status": "failed", "budget": "max_tokens"},
		},
		{
			"cancelled run is info",
			trace.Event{Seq: 9, Time: t0, Kind: trace.RunSettled, RunID: "r1", Status: "cancelled"},
			"INFO", map[string]any{"seq": 9.0, "run_id": "r1", "status": "cancelled"},
		},
		{
			"every field",
			trace.Event{Seq: 7, Time: t0, Kind: trace.ModelCall, RunID: "r", Flow: "f", StepID: "s", StepType: "llm",
				Attempt: 2, Status: "ok", DurationMS: 900, Model: "m", Tool: "t", TokensIn: 10, TokensOut: 20,
				ErrorClass: "format", Error: "bad", Origin: trace.OriginModel, Budget: "b", Decision: "deny",
				InputSHA: "in", OutputSHA: "out", Preview: "<p>"},
			"INFO", map[string]any{"seq": 7.0, "run_id": "r", "flow": "f", "step_id": "s", "step_type": "llm",
				"attempt": 2.0, "status": "ok", "duration_ms": 900.0, "model": "m", "tool": "t", "tokens_in": 10.0,
				"tokens_out": 20.0, "error_class": "format", "error": "bad", "origin": "model", "budget": "b",
				"decision": "deny", "input_sha256": "in", "output_sha256": "out", "preview": "<p>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			New(slog.New(slog.NewJSONHandler(&b, nil))).Emit(context.Background(), &tt.e)
			var got map[string]any
			if err := json.Unmarshal(b.Bytes(), &got); err != nil {
				t.Fatalf("decode %q: %v", b.String(), err)
			}
			want := map[string]any{"time": "2026-03-14T09:26:53.589Z", "level": tt.level, "msg": string(tt.e.Kind)}
			for k, v := range tt.attrs {
				want[k] = v
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("record\n got: %v\nwant: %v", got, want)
			}
		})
	}
}

func TestEmitRespectsLevel(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	s := New(slog.New(slog.NewJSONHandler(&b, &slog.HandlerOptions{Level: slog.LevelWarn})))
	s.Emit(context.Background(), &trace.Event{Kind: trace.StepStarted, RunID: "r"})
	s.Emit(context.Background(), &trace.Event{Kind: trace.AttemptFailed, RunID: "r"})
	s.Emit(context.Background(), &trace.Event{Kind: trace.CallDiscarded, RunID: "r"})
	lines := bytes.Count(b.Bytes(), []byte("\n"))
	if lines != 2 || !bytes.Contains(b.Bytes(), []byte(`"msg":"attempt_failed"`)) || !bytes.Contains(b.Bytes(), []byte(`"msg":"call_discarded"`)) {
		t.Fatalf("want only the warnings, got %q", b.String())
	}
}

func TestEmitZeroTimeUsesNow(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	before := time.Now()
	New(slog.New(slog.NewJSONHandler(&b, nil))).Emit(context.Background(), &trace.Event{Kind: trace.RunStarted})
	var got struct{ Time time.Time }
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Time.Before(before.Add(-time.Second)) || got.Time.After(time.Now().Add(time.Second)) {
		t.Fatalf("time %v is not now", got.Time)
	}
}

// TestNilLoggerUsesDefault is not parallel: it replaces slog's default logger.
func TestNilLoggerUsesDefault(t *testing.T) {
	old := slog.Default()
	defer slog.SetDefault(old)
	var b bytes.Buffer
	s := New(nil)
	slog.SetDefault(slog.New(slog.NewJSONHandler(&b, nil))) // after New: read at Emit time
	s.Emit(context.Background(), &trace.Event{Kind: trace.RunStarted, RunID: "r"})
	if !bytes.Contains(b.Bytes(), []byte(`"msg":"run_started"`)) {
		t.Fatalf("default logger got %q", b.String())
	}
}

func TestTextGolden(t *testing.T) {
	t.Parallel()
	events := []trace.Event{
		{Seq: 1, Time: t0, Kind: trace.RunStarted, RunID: "r1", Flow: "triage"},
		{Seq: 2, Time: t0, Kind: trace.AttemptFailed, RunID: "r1", StepID: "fetch", Attempt: 1,
			ErrorClass: "transient", Error: "dial tcp: connection reset", Origin: trace.OriginTool},
		{Seq: 3, Time: t0.Add(time.Second), Kind: trace.ModelCall, RunID: "r1", StepID: "classify", Attempt: 1,
			Model: "gpt-4o-mini", TokensIn: 812, TokensOut: 40, DurationMS: 899},
		{Seq: 4, Time: t0.Add(2 * time.Second), Kind: trace.RunSettled, RunID: "r1", Status: "failed", DurationMS: 2000},
	}
	var b bytes.Buffer
	s := New(slog.New(slog.NewTextHandler(&b, nil)))
	for i := range events {
		s.Emit(context.Background(), &events[i])
	}
	golden := filepath.Join("testdata", "events.golden.txt")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Fatalf("output differs from %s (run with -update if intended)\n got:\n%s\nwant:\n%s", golden, b.Bytes(), want)
	}
}

func BenchmarkEmit(b *testing.B) {
	e := trace.Event{Seq: 11, Time: t0, Kind: trace.ModelCall, RunID: "0195b3c2-7f4e-7c1a-9d2b-5c1e8f0a4b6d",
		StepID: "classify", Attempt: 1, Model: "gpt-4o-mini", TokensIn: 812, TokensOut: 40, DurationMS: 899}
	s := New(slog.New(slog.NewJSONHandler(io.Discard, nil)))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s.Emit(ctx, &e)
	}
}
