package journal_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/reinhq/rein/journal"
)

func TestAppendEventMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 3, 10, 4, 5, 123456789, time.UTC)
	for _, e := range []journal.Event{
		{},
		{Seq: 1, Time: at, Kind: journal.RunStarted, RunID: "r", Flow: "f"},
		{Seq: 7, Time: at, Kind: journal.StepSettled, RunID: "r", StepID: "s<&>", StepType: "tool", Attempt: 2, Status: "failed",
			DurationMS: 12.5, Model: "m", Tool: "t", TokensIn: 3, TokensOut: 4, ErrorClass: "business", Error: "bad \"quote\"\n\u2028",
			Origin: journal.OriginTool, Budget: "b", Decision: "d", PlanStep: "p", InputSHA: "i", OutputSHA: "o", Preview: `{"a":1}`},
		{Seq: 8, Time: at, Kind: journal.StepSettled, RunID: "r", DurationMS: 0.137482},
		{Seq: 9, Time: at, Kind: journal.ModelCall, RunID: "r", DurationMS: 1e-6},
		{Seq: 10, Time: at, Kind: journal.ModelCall, RunID: "r", DurationMS: 3e-7},
		{Seq: 11, Time: at, Kind: journal.RunSettled, RunID: "r", DurationMS: 123456.000001},
		{Seq: 12, Time: at, Kind: journal.RunSettled, RunID: "r", DurationMS: 2e21},
		{Seq: 13, Time: at, Kind: journal.ToolProcess, RunID: "r", StepID: "s", Attempt: 1,
			Process: journal.Process{PGID: 4242, Start: 987654, Boot: "b-1", Owner: "host/12/ab/pidns:4"}},
		{Seq: 14, Time: at, Kind: journal.ToolProcess, RunID: "r", Process: journal.Process{PGID: 7}},
		{Seq: 15, Time: at, Kind: journal.AgentCall, RunID: "r", StepID: "a", Attempt: 1, Turn: 3, Data: `{"index":1,"args":"{\"x\": \"<&>\"}"}`},
	} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&e); err != nil {
			t.Fatal(err)
		}
		got := journal.AppendEvent(nil, &e)
		if !bytes.Equal(got, bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Errorf("AppendEvent\n got %s\nwant %s", got, want.Bytes())
		}
		var back journal.Event
		if err := json.Unmarshal(got, &back); err != nil || !reflect.DeepEqual(back, e) {
			t.Errorf("round trip: %+v, %v; want %+v", back, err, e)
		}
	}
	// A time in another zone is written in UTC.
	e := journal.Event{Time: at.In(time.FixedZone("X", 3600))}
	var back journal.Event
	if err := json.Unmarshal(journal.AppendEvent(nil, &e), &back); err != nil || !back.Time.Equal(at) || back.Time.Location() != time.UTC {
		t.Errorf("zoned time read back as %v, %v", back.Time, err)
	}
}

// A journal written when durations were whole milliseconds reads the same.
func TestWholeMillisecondDurationsRead(t *testing.T) {
	t.Parallel()
	var e journal.Event
	if err := json.Unmarshal([]byte(`{"seq":3,"kind":"step_settled","run_id":"r","duration_ms":12}`), &e); err != nil {
		t.Fatal(err)
	}
	if e.DurationMS != 12 || e.Duration() != 12*time.Millisecond {
		t.Errorf("duration_ms 12 read as %v (%v)", e.DurationMS, e.Duration())
	}
	if got := journal.Millis(137482 * time.Nanosecond); got != 0.137482 {
		t.Errorf("Millis(137.482µs) = %v, want 0.137482", got)
	}
}

// Every duration_ms, from whole nanoseconds or not, is written as
// encoding/json writes it.
func TestDurationsMatchEncodingJSON(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var ds []float64
	for _, d := range []time.Duration{1, 9, 10, 999, 1000, 1001, 999999, time.Millisecond, 1500 * time.Microsecond,
		time.Second, time.Hour, 24 * time.Hour, 11 * 24 * time.Hour, 12 * 24 * time.Hour, 1<<53 - 1, math.MaxInt64} {
		ds = append(ds, journal.Millis(d))
	}
	for range 20000 {
		ds = append(ds, journal.Millis(time.Duration(rng.Int64N(int64(1)<<rng.IntN(60)+1))), rng.Float64()*math.Pow(10, float64(rng.IntN(30)-10)))
	}
	ds = append(ds, 0.1, 0.3, 1e-6, 1e-7, 999999999.9999999, 1e9, math.Nextafter(0.002014, 1), math.SmallestNonzeroFloat64)
	for _, f := range ds {
		e := journal.Event{DurationMS: f}
		want, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		if got := journal.AppendEvent(nil, &e); !bytes.Equal(got, want) {
			t.Fatalf("duration_ms %v:\n got %s\nwant %s", f, got, want)
		}
	}
}
