package summary

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/trace"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

var t0 = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

// at returns t0 plus ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// scenario is one failed run: fetch retries two transient tool failures and
// succeeds; classify gets a format error from the model, then succeeds;
// notify is skipped; summarize runs out of its token budget, which fails the run.
func scenario() []trace.Event {
	const r = "run-7"
	ev := []trace.Event{
		{Kind: trace.RunStarted, RunID: r, Flow: "triage", Time: at(0)},
		{Kind: trace.StepStarted, RunID: r, StepID: "fetch", StepType: "tool", Time: at(1)},
		{Kind: trace.AttemptFailed, RunID: r, StepID: "fetch", Attempt: 1, Tool: "http.get", ErrorClass: "transient",
			Error: "dial tcp 10.0.0.7:443: connection reset by peer", Origin: trace.OriginTool, Time: at(400)},
		{Kind: trace.AttemptFailed, RunID: r, StepID: "fetch", Attempt: 2, Tool: "http.get", ErrorClass: "transient",
			Error: "HTTP 503 Service Unavailable", Origin: trace.OriginTool, Time: at(1400)},
		{Kind: trace.StepSettled, RunID: r, StepID: "fetch", StepType: "tool", Attempt: 3, Status: "succeeded",
			DurationMS: 3100, Time: at(3101)},
		{Kind: trace.StepStarted, RunID: r, StepID: "classify", StepType: "llm", Time: at(3102)},
		{Kind: trace.ModelCall, RunID: r, StepID: "classify", Attempt: 1, Model: "gpt-4o-mini", TokensIn: 800,
			TokensOut: 60, DurationMS: 700, Time: at(3800)},
		{Kind: trace.AttemptFailed, RunID: r, StepID: "classify", Attempt: 1, ErrorClass: "format",
			Error:  "output breaks output_schema at /label: \"urgent!\" is not one of [billing, bug, other]\n{\"label\": \"urgent!\"}",
			Origin: trace.OriginModel, Time: at(3801)},
		{Kind: trace.ModelCall, RunID: r, StepID: "classify", Attempt: 2, Model: "gpt-4o-mini", TokensIn: 950,
			TokensOut: 40, DurationMS: 650, Time: at(4450)},
		{Kind: trace.StepSettled, RunID: r, StepID: "classify", Attempt: 2, Status: "succeeded", DurationMS: 1350, Time: at(4452)},
		{Kind: trace.StepSettled, RunID: r, StepID: "notify", StepType: "tool", Status: "skipped", Time: at(4453)},
		{Kind: trace.StepStarted, RunID: r, StepID: "summarize", StepType: "llm", Time: at(4454)},
		{Kind: trace.ModelCall, RunID: r, StepID: "summarize", Attempt: 1, Model: "gpt-4o", TokensIn: 6000,
			TokensOut: 2100, DurationMS: 2500, Time: at(6954)},
		{Kind: trace.StepSettled, RunID: r, StepID: "summarize", Attempt: 1, Status: "failed", DurationMS: 2502,
			ErrorClass: "budget", Budget: "max_tokens", Error: "max_tokens 10000 exceeded (used 10950)",
			Origin: trace.OriginEngine, Time: at(6956)},
		{Kind: trace.RunSettled, RunID: r, Status: "failed", DurationMS: 6957, ErrorClass: "budget", Budget: "max_tokens",
			Error: "step summarize: max_tokens 10000 exceeded (used 10950)", Origin: trace.OriginEngine, Time: at(6957)},
	}
	for i := range ev {
		ev[i].Seq = int64(i + 1)
	}
	return ev
}

func TestSummarizeScenario(t *testing.T) {
	t.Parallel()
	s := Summarize(scenario())
	if len(s.Runs) != 1 {
		t.Fatalf("got %d runs, want 1", len(s.Runs))
	}
	r := s.Runs[0]
	wantRun := Run{RunID: "run-7", Flow: "triage", Status: trace.RunFailed, Duration: 6957 * time.Millisecond,
		TokensIn: 7750, TokensOut: 2200, ModelCalls: 3,
		Failure: &Failure{Class: "budget", Origin: trace.OriginEngine, Budget: "max_tokens",
			Message: "step summarize: max_tokens 10000 exceeded (used 10950)"}}
	gotRun := r
	gotRun.Steps = nil
	if !reflect.DeepEqual(gotRun, wantRun) {
		t.Errorf("run\n got: %+v\nwant: %+v", gotRun, wantRun)
	}
	fetchFailures := []Failure{
		{Attempt: 1, Class: "transient", Origin: trace.OriginTool, Message: "dial tcp 10.0.0.7:443: connection reset by peer"},
		{Attempt: 2, Class: "transient", Origin: trace.OriginTool, Message: "HTTP 503 Service Unavailable"},
	}
	formatFailure := Failure{Attempt: 1, Class: "format", Origin: trace.OriginModel,
		Message: scenario()[7].Error}
	budgetFailure := Failure{Attempt: 1, Class: "budget", Origin: trace.OriginEngine, Budget: "max_tokens",
		Message: "max_tokens 10000 exceeded (used 10950)"}
	wantSteps := []Step{
		{StepID: "fetch", Type: "tool", Status: trace.StepSucceeded, Attempts: 3, Retries: 2, Duration: 3100 * time.Millisecond,
			Failure: &fetchFailures[1], Failures: fetchFailures},
		{StepID: "classify", Type: "llm", Status: trace.StepSucceeded, Attempts: 2, Retries: 1, Duration: 1350 * time.Millisecond,
			TokensIn: 1750, TokensOut: 100, ModelCalls: 2, Failure: &formatFailure, Failures: []Failure{formatFailure}},
		{StepID: "notify", Type: "tool", Status: trace.StepSkipped},
		{StepID: "summarize", Type: "llm", Status: trace.StepFailed, Attempts: 1, Duration: 2502 * time.Millisecond,
			TokensIn: 6000, TokensOut: 2100, ModelCalls: 1, Failure: &budgetFailure, Failures: []Failure{budgetFailure}},
	}
	if len(r.Steps) != len(wantSteps) {
		t.Fatalf("got %d steps, want %d", len(r.Steps), len(wantSteps))
	}
	for i := range wantSteps {
		if !reflect.DeepEqual(r.Steps[i], wantSteps[i]) {
			t.Errorf("step %s\n got: %+v\nwant: %+v", wantSteps[i].StepID, r.Steps[i], wantSteps[i])
		}
	}
	if got := r.Steps[0].FailedClasses(); !reflect.DeepEqual(got, []string{"transient", "transient"}) {
		t.Errorf("FailedClasses = %v", got)
	}
}

func TestSummarizeCases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		events []trace.Event
		check  func(t *testing.T, s *Summary)
	}{
		{"no events", nil, func(t *testing.T, s *Summary) {
			if len(s.Runs) != 0 {
				t.Errorf("runs = %+v", s.Runs)
			}
		}},
		{"cut-short trace: run and step are running, duration from event times", []trace.Event{
			{Kind: trace.RunStarted, RunID: "r", Time: at(0)},
			{Kind: trace.StepStarted, RunID: "r", StepID: "a", Time: at(10)},
			{Kind: trace.ModelCall, RunID: "r", StepID: "a", Attempt: 1, TokensIn: 5, Time: at(250)},
		}, func(t *testing.T, s *Summary) {
			r := s.Runs[0]
			if r.Status != trace.RunRunning || r.Duration != 250*time.Millisecond {
				t.Errorf("run status %q duration %v, want running 250ms", r.Status, r.Duration)
			}
			if st := r.Steps[0]; st.Status != trace.StepRunning || st.Attempts != 1 || st.Duration != 0 {
				t.Errorf("step %+v", st)
			}
		}},
		{"failed step without error text falls back to the last attempt", []trace.Event{
			{Kind: trace.AttemptFailed, RunID: "r", StepID: "a", Attempt: 1, ErrorClass: "business", Origin: trace.OriginTool, Error: "404"},
			{Kind: trace.StepSettled, RunID: "r", StepID: "a", Attempt: 1, Status: "failed"},
		}, func(t *testing.T, s *Summary) {
			st := s.Runs[0].Steps[0]
			want := Failure{Attempt: 1, Class: "business", Origin: trace.OriginTool, Message: "404"}
			if st.Failure == nil || *st.Failure != want || len(st.Failures) != 1 || st.Retries != 0 {
				t.Errorf("step %+v", st)
			}
		}},
		{"step_settled repeating the last attempt's error is not a second failure", []trace.Event{
			{Kind: trace.AttemptFailed, RunID: "r", StepID: "a", Attempt: 2, ErrorClass: "transient", Origin: trace.OriginTool, Error: "timeout"},
			{Kind: trace.StepSettled, RunID: "r", StepID: "a", Attempt: 2, Status: "failed", ErrorClass: "transient", Origin: trace.OriginTool, Error: "timeout"},
		}, func(t *testing.T, s *Summary) {
			if st := s.Runs[0].Steps[0]; len(st.Failures) != 1 || st.Failure.Class != "transient" {
				t.Errorf("step %+v", st)
			}
		}},
		{"failed step with no error anywhere still has a Failure", []trace.Event{
			{Kind: trace.StepSettled, RunID: "r", StepID: "a", Attempt: 1, Status: "failed"},
		}, func(t *testing.T, s *Summary) {
			if st := s.Runs[0].Steps[0]; st.Failure == nil || *st.Failure != (Failure{Attempt: 1}) {
				t.Errorf("step %+v", st)
			}
		}},
		{"repeated attempt numbers count once; attempt 0 is not an attempt", []trace.Event{
			{Kind: trace.ModelCall, RunID: "r", StepID: "a", Attempt: 1},
			{Kind: trace.ModelCall, RunID: "r", StepID: "a", Attempt: 1},
			{Kind: trace.ModelCall, RunID: "r", StepID: "b"},
			{Kind: trace.StepSettled, RunID: "r", StepID: "a", Attempt: 1, Status: "succeeded"},
		}, func(t *testing.T, s *Summary) {
			a, b := s.Runs[0].Steps[0], s.Runs[0].Steps[1]
			if a.Attempts != 1 || a.ModelCalls != 2 || b.Attempts != 0 || s.Runs[0].ModelCalls != 3 {
				t.Errorf("a %+v, b %+v", a, b)
			}
		}},
		{"last failed attempt that was not retried is no retry", []trace.Event{
			{Kind: trace.AttemptFailed, RunID: "r", StepID: "a", Attempt: 1, ErrorClass: "format"},
			{Kind: trace.AttemptFailed, RunID: "r", StepID: "a", Attempt: 2, ErrorClass: "format"},
			{Kind: trace.StepSettled, RunID: "r", StepID: "a", Attempt: 2, Status: "defaulted"},
		}, func(t *testing.T, s *Summary) {
			if st := s.Runs[0].Steps[0]; st.Attempts != 2 || st.Retries != 1 || st.Status != trace.StepDefaulted {
				t.Errorf("step %+v", st)
			}
		}},
		{"runs interleaved in one trace stay apart, in order of appearance", []trace.Event{
			{Kind: trace.RunStarted, RunID: "b", Flow: "fb"},
			{Kind: trace.RunStarted, RunID: "a", Flow: "fa"},
			{Kind: trace.ModelCall, RunID: "a", StepID: "x", TokensIn: 1},
			{Kind: trace.ModelCall, RunID: "b", StepID: "x", TokensIn: 2},
			{Kind: trace.ModelCall, RunID: "b", TokensIn: 4},
			{Kind: trace.RunSettled, RunID: "a", Status: "succeeded", DurationMS: 9},
		}, func(t *testing.T, s *Summary) {
			if len(s.Runs) != 2 {
				t.Fatalf("runs %+v", s.Runs)
			}
			b, a := s.Runs[0], s.Runs[1]
			if b.RunID != "b" || b.Flow != "fb" || b.TokensIn != 6 || b.Steps[0].TokensIn != 2 || b.Status != trace.RunRunning {
				t.Errorf("run b %+v", b)
			}
			if a.RunID != "a" || a.TokensIn != 1 || a.Status != trace.RunSucceeded || a.Duration != 9*time.Millisecond {
				t.Errorf("run a %+v", a)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.check(t, Summarize(tt.events))
		})
	}
}

func TestWriteGolden(t *testing.T) {
	t.Parallel()
	many := scenario()
	for i := range 12 { // more steps than TopN, in a second run
		id := "step" + string(rune('a'+i))
		many = append(many,
			trace.Event{Kind: trace.ModelCall, RunID: "run-8", StepID: id, Attempt: 1, TokensIn: 10 * i, TokensOut: i},
			trace.Event{Kind: trace.StepSettled, RunID: "run-8", StepID: id, Attempt: 1, Status: "succeeded", DurationMS: float64(100 + i)})
	}
	many = append(many, trace.Event{Kind: trace.RunSettled, RunID: "run-8", Status: "succeeded", DurationMS: 1500})
	tests := []struct {
		name   string
		events []trace.Event
		write  func(*Summary, *bytes.Buffer) error
		golden string
	}{
		{"text", scenario(), func(s *Summary, b *bytes.Buffer) error { return s.WriteText(b) }, "scenario.txt"},
		{"json", scenario(), func(s *Summary, b *bytes.Buffer) error { return s.WriteJSON(b) }, "scenario.json"},
		{"text with two runs and more than TopN steps", many, func(s *Summary, b *bytes.Buffer) error { return s.WriteText(b) }, "two-runs.txt"},
		{"text of an empty trace", nil, func(s *Summary, b *bytes.Buffer) error { return s.WriteText(b) }, "empty.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := tt.write(Summarize(tt.events), &b); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tt.golden)
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
			for i, line := range strings.Split(b.String(), "\n") {
				if strings.TrimRight(line, " ") != line {
					t.Errorf("line %d has trailing spaces: %q", i+1, line)
				}
			}
		})
	}
}

func TestWriteJSONDecodes(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := Summarize(scenario()).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Runs []struct {
			Status     string `json:"status"`
			DurationMS int64  `json:"duration_ms"`
			Steps      []struct {
				StepID     string `json:"step_id"`
				DurationMS int64  `json:"duration_ms"`
				Retries    int    `json:"retries"`
			} `json:"steps"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	r := got.Runs[0]
	if r.Status != "failed" || r.DurationMS != 6957 || r.Steps[0].StepID != "fetch" || r.Steps[0].DurationMS != 3100 || r.Steps[0].Retries != 2 {
		t.Fatalf("decoded %+v", got)
	}
}

type errWriter struct{ n int }

func (w *errWriter) Write(p []byte) (int, error) {
	if w.n -= len(p); w.n < 0 {
		return 0, errors.New("broken pipe")
	}
	return len(p), nil
}

func TestWriteErrors(t *testing.T) {
	t.Parallel()
	s := Summarize(scenario())
	for _, n := range []int{0, 10, 300} {
		if err := s.WriteText(&errWriter{n: n}); err == nil {
			t.Errorf("WriteText after %d bytes: no error", n)
		}
		if err := s.WriteJSON(&errWriter{n: n}); err == nil {
			t.Errorf("WriteJSON after %d bytes: no error", n)
		}
	}
}
