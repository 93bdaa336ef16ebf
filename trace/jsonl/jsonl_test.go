package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/reinhq/rein/trace"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

var t0 = time.Date(2026, 3, 14, 9, 26, 53, 589793238, time.UTC)

// nasty are strings that stress the escaper.
var nasty = []string{
	"",
	"plain",
	`quote " and backslash \ and slash /`,
	"controls \x00\x01\x07\b\f\n\r\t\x1f\x7f end",
	"<script>alert('x')</script> & more",
	"unicode: héllo, 日本語, emoji 🎉",
	"line\u2028para\u2029sep",
	"invalid \xff\xfe utf8 \xc3( cut \xe2\x82",
	"\xed\xa0\x80 surrogate half",
	"trailing backslash \\",
	strings.Repeat("long é ", 500),
}

// fullEvent sets every field of Event.
func fullEvent(s string) trace.Event {
	return trace.Event{
		Seq: 42, Time: t0, Kind: trace.AttemptFailed, RunID: "run-" + s,
		Flow: s, StepID: s, StepType: s, Attempt: 3, Status: s, DurationMS: 1234,
		Model: s, Tool: s, TokensIn: 100, TokensOut: -7, ErrorClass: s, Error: s,
		Origin: trace.Origin(s), Budget: s, Decision: s, PlanStep: s, InputSHA: s, OutputSHA: s, Preview: s,
	}
}

// stdlib encodes e the way the sink promises to: encoding/json without HTML escaping.
func stdlib(t testing.TB, e *trace.Event) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	c := *e
	c.Time = c.Time.UTC()
	if err := enc.Encode(&c); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sanitize is what a string becomes after encoding: each invalid byte is U+FFFD.
func sanitize(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r)
		i += n
	}
	return b.String()
}

func sanitizeEvent(e trace.Event) trace.Event {
	for _, p := range []*string{&e.RunID, &e.Flow, &e.StepID, &e.StepType, &e.Status, &e.Model, &e.Tool,
		&e.ErrorClass, &e.Error, &e.Budget, &e.Decision, &e.PlanStep, &e.InputSHA, &e.OutputSHA, &e.Preview} {
		*p = sanitize(*p)
	}
	e.Kind = trace.Kind(sanitize(string(e.Kind)))
	e.Origin = trace.Origin(sanitize(string(e.Origin)))
	e.Time = e.Time.UTC().Round(0)
	return e
}

func encode(t testing.TB, events ...trace.Event) []byte {
	t.Helper()
	var b bytes.Buffer
	s := New(&b)
	for i := range events {
		s.Emit(context.Background(), &events[i])
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return b.Bytes()
}

func TestEmitMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		e    trace.Event
	}{
		{"zero event keeps the four required fields", trace.Event{}},
		{"minimal", trace.Event{Seq: 1, Time: t0, Kind: trace.RunStarted, RunID: "r1", Flow: "triage"}},
		{"negative numbers", trace.Event{Seq: -5, Time: t0, Kind: trace.ModelCall, RunID: "r", Attempt: -1, DurationMS: -3}},
		{"whole seconds", trace.Event{Seq: 2, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Kind: trace.StepStarted, RunID: "r"}},
		{"non-UTC time is written in UTC", trace.Event{Seq: 3, Time: t0.In(time.FixedZone("X", 5*3600+1800)), Kind: trace.StepSettled, RunID: "r"}},
	}
	for _, s := range nasty {
		tests = append(tests, struct {
			name string
			e    trace.Event
		}{"every field " + strings.ToValidUTF8(s[:min(len(s), 20)], "?"), fullEvent(s)})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := encode(t, tt.e)
			want := stdlib(t, &tt.e)
			if !bytes.Equal(got, want) {
				t.Fatalf("encoding differs from encoding/json\n got: %s\nwant: %s", got, want)
			}
			events, err := Read(bytes.NewReader(got))
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if len(events) != 1 || !reflect.DeepEqual(events[0], sanitizeEvent(tt.e)) {
				t.Fatalf("round trip\n got: %+v\nwant: %+v", events, sanitizeEvent(tt.e))
			}
		})
	}
}

func TestEmitRequiredFieldsAlwaysPresent(t *testing.T) {
	t.Parallel()
	got := string(encode(t, trace.Event{}))
	want := `{"seq":0,"time":"0001-01-01T00:00:00Z","kind":"","run_id":""}` + "\n"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestEmitManyRoundTrip(t *testing.T) {
	t.Parallel()
	var in []trace.Event
	kinds := []trace.Kind{trace.RunStarted, trace.StepStarted, trace.AttemptFailed, trace.ModelCall,
		trace.StepSettled, trace.GateDecision, trace.RunSettled}
	for i := range 2000 {
		e := fullEvent(nasty[i%len(nasty)])
		e.Seq = int64(i)
		e.Kind = kinds[i%len(kinds)]
		e.Time = t0.Add(time.Duration(i) * 1337 * time.Microsecond)
		if i%3 == 0 {
			e.Model, e.Tool, e.TokensIn, e.Attempt = "", "", 0, 0
		}
		in = append(in, e)
	}
	out, err := Read(bytes.NewReader(encode(t, in...)))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(out) != len(in) {
		t.Fatalf("got %d events, want %d", len(out), len(in))
	}
	for i := range in {
		if want := sanitizeEvent(in[i]); !reflect.DeepEqual(out[i], want) {
			t.Fatalf("event %d\n got: %+v\nwant: %+v", i, out[i], want)
		}
	}
}

func TestEmitGolden(t *testing.T) {
	t.Parallel()
	events := []trace.Event{
		{Seq: 1, Time: t0, Kind: trace.RunStarted, RunID: "r1", Flow: "triage"},
		{Seq: 2, Time: t0.Add(time.Millisecond), Kind: trace.StepStarted, RunID: "r1", StepID: "classify", StepType: "llm"},
		{Seq: 3, Time: t0.Add(900 * time.Millisecond), Kind: trace.ModelCall, RunID: "r1", StepID: "classify", Attempt: 1,
			Model: "gpt-4o-mini", TokensIn: 812, TokensOut: 40, DurationMS: 899},
		{Seq: 4, Time: t0.Add(901 * time.Millisecond), Kind: trace.AttemptFailed, RunID: "r1", StepID: "classify", Attempt: 1,
			ErrorClass: "format", Error: "output is not JSON: \"<b>urgent</b>\"\n", Origin: trace.OriginModel, Preview: "<b>urgent</b>"},
		{Seq: 5, Time: t0.Add(2 * time.Second), Kind: trace.StepSettled, RunID: "r1", StepID: "classify", Attempt: 2,
			Status: "succeeded", DurationMS: 1999, OutputSHA: "9f86d081884c7d65"},
		{Seq: 6, Time: t0.Add(2 * time.Second), Kind: trace.RunSettled, RunID: "r1", Status: "succeeded", DurationMS: 2000},
	}
	got := encode(t, events...)
	golden := filepath.Join("testdata", "events.golden.jsonl")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("output differs from %s (run with -update if intended)\n got:\n%s\nwant:\n%s", golden, got, want)
	}
}

func TestEmitConcurrent(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	s := New(&b)
	const runs, per = 8, 500
	var wg sync.WaitGroup
	for r := range runs {
		wg.Go(func() {
			for i := range per {
				e := fullEvent(nasty[(r+i)%len(nasty)])
				e.Seq = int64(i)
				e.RunID = string(rune('a' + r))
				s.Emit(context.Background(), &e)
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	events, err := Read(&b)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	next := map[string]int64{}
	for _, e := range events {
		if e.Seq != next[e.RunID] {
			t.Fatalf("run %s: seq %d, want %d", e.RunID, e.Seq, next[e.RunID])
		}
		next[e.RunID]++
	}
	if len(events) != runs*per {
		t.Fatalf("got %d events, want %d", len(events), runs*per)
	}
}

func TestFlushOnRunSettled(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	s := New(&b)
	s.Emit(context.Background(), &trace.Event{Seq: 1, Kind: trace.StepSettled, RunID: "r"})
	if b.Len() != 0 {
		t.Fatalf("step_settled was written before a flush: %q", b.String())
	}
	s.Emit(context.Background(), &trace.Event{Seq: 2, Kind: trace.RunSettled, RunID: "r"})
	if n := bytes.Count(b.Bytes(), []byte("\n")); n != 2 {
		t.Fatalf("after run_settled %d lines are written, want 2", n)
	}
}

// failWriter fails every write after the first n bytes.
type failWriter struct {
	n   int
	err error
	got bytes.Buffer
}

func (w *failWriter) Write(p []byte) (int, error) {
	if w.got.Len()+len(p) > w.n {
		return 0, w.err
	}
	return w.got.Write(p)
}

func TestWriteErrorIsRememberedAndReturned(t *testing.T) {
	t.Parallel()
	errDisk := errors.New("disk full")
	tests := []struct {
		name   string
		finish func(*Sink) error
	}{
		{"Flush", (*Sink).Flush},
		{"Close", (*Sink).Close},
		{"Err after Flush", func(s *Sink) error { _ = s.Flush(); return s.Err() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := &failWriter{n: 0, err: errDisk}
			s := New(w)
			e := fullEvent(strings.Repeat("x", bufferSize)) // larger than the buffer: written through
			s.Emit(context.Background(), &e)
			if !errors.Is(s.Err(), errDisk) {
				t.Fatalf("Err() = %v, want %v", s.Err(), errDisk)
			}
			w.err = errors.New("second error")
			w.n = 1 << 30
			s.Emit(context.Background(), &trace.Event{Kind: trace.RunSettled})
			if err := tt.finish(s); !errors.Is(err, errDisk) {
				t.Fatalf("got %v, want the first error %v", err, errDisk)
			}
			if w.got.Len() != 0 {
				t.Fatalf("events after an error were written: %q", w.got.String())
			}
		})
	}
}

func TestCloseTwiceAndEmitAfterClose(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	s := New(&b)
	s.Emit(context.Background(), &trace.Event{Seq: 1})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	s.Emit(context.Background(), &trace.Event{Seq: 2})
	if !errors.Is(s.Err(), ErrClosed) {
		t.Fatalf("Err() after Emit on a closed sink = %v, want ErrClosed", s.Err())
	}
	if n := strings.Count(b.String(), "\n"); n != 1 {
		t.Fatalf("%d lines written, want 1", n)
	}
}

func TestEmitDoesNotAllocate(t *testing.T) {
	e := fullEvent("some step <with> \"quotes\" and ünïcode")
	s := New(discardWriter{})
	s.Emit(context.Background(), &e) // warm the buffer
	if n := testing.AllocsPerRun(1000, func() { s.Emit(context.Background(), &e) }); n != 0 {
		t.Fatalf("Emit allocates %v times per call, want 0", n)
	}
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
