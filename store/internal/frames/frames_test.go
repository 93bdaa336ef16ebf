package frames

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/journal/journaltest"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// FuzzDecode: a row of any bytes reads back as records or as an error
// naming the run, never a panic.
func FuzzDecode(f *testing.F) {
	ev := trace.AppendJSON(nil, &trace.Event{Seq: 3, Kind: trace.StepSettled, RunID: "r", StepID: "a"})
	f.Add(AppendEvent(nil, 3, ev), AppendStep(nil, "a", []byte(`{"step_id":"a","status":"succeeded"}`), []byte(`1`), nil, nil))
	f.Add([]byte{0x03, 0x01, 0xff}, []byte{0x01, 0x05, 'a'})
	f.Fuzz(func(t *testing.T, events, steps []byte) {
		if _, err := DecodeEvents(nil, "r", events, 0, -1); err != nil && !strings.Contains(err.Error(), "run r") {
			t.Fatalf("error %q does not name the run", err)
		}
		if err := EachStepFrame("r", steps, func(sf *journal.StoredStep) {
			if _, _, err := journal.DecodeStep("r", sf); err != nil && !strings.Contains(err.Error(), "run r") {
				t.Fatalf("error %q does not name the run", err)
			}
		}); err != nil && !strings.Contains(err.Error(), "run r") {
			t.Fatalf("error %q does not name the run", err)
		}
	})
}

// ReplaceEvent swaps one frame and keeps the others.
func TestReplaceEvent(t *testing.T) {
	t.Parallel()
	var row []byte
	for seq := int64(1); seq <= 3; seq++ {
		row = AppendEvent(row, seq, trace.AppendJSON(nil, &trace.Event{Seq: seq, Kind: trace.StepStarted, RunID: "r"}))
	}
	out, hit, err := ReplaceEvent(row, 2, store.JournalVersion+1, trace.AppendJSON(nil, &trace.Event{Seq: 2, Kind: trace.StepStarted}))
	if err != nil || !hit {
		t.Fatalf("ReplaceEvent = %v, %v", hit, err)
	}
	if _, err := DecodeEvents(nil, "r", out, 0, -1); err == nil || !strings.Contains(err.Error(), "seq 2") || !strings.Contains(err.Error(), "newer") {
		t.Errorf("a record of a newer version: err = %v", err)
	}
	if evs, err := DecodeEvents(nil, "r", out, 2, -1); err != nil || len(evs) != 1 || evs[0].Seq != 3 {
		t.Errorf("the records after it: %v, %v", evs, err)
	}
	if _, hit, _ := ReplaceEvent(row, 9, 1, nil); hit {
		t.Error("ReplaceEvent hit a seq the row does not hold")
	}
	if _, _, err := ReplaceEvent(row[:len(row)-1], 2, 1, nil); err == nil {
		t.Error("ReplaceEvent of a truncated row succeeded")
	}
}

func TestFramesRoundTrip(t *testing.T) {
	t.Parallel()
	var row []byte
	for seq := int64(1); seq <= 3; seq++ {
		row = AppendEvent(row, seq, trace.AppendJSON(nil, &trace.Event{Seq: seq, Kind: trace.StepStarted, RunID: "r"}))
	}
	evs, err := DecodeEvents(nil, "r", row, 1, 1)
	if err != nil || len(evs) != 1 || evs[0].Seq != 2 {
		t.Fatalf("DecodeEvents(after 1, limit 1) = %v, %v", evs, err)
	}
	if _, err := DecodeEvents(nil, "r", row[:len(row)-1], 0, -1); err == nil {
		t.Error("a truncated row decoded")
	}
	steps := AppendStep(nil, "a", []byte(`{"step_id":"a","status":"running"}`), []byte(`{"x":1}`), []byte(`in`), nil)
	var got []journal.StoredStep
	if err := EachStepFrame("r", steps, func(sf *journal.StoredStep) { got = append(got, *sf) }); err != nil || len(got) != 1 {
		t.Fatalf("eachStepFrame = %d, %v", len(got), err)
	}
	if _, rec, err := journal.DecodeStep("r", &got[0]); err != nil || rec.Status != trace.StepRunning || string(got[0].Output) != `{"x":1}` || string(got[0].Input) != "in" {
		t.Errorf("step frame = %+v %+v, %v", got[0], rec, err)
	}
	// a record naming another step than its frame is damage
	bad := AppendStep(nil, "a", []byte(`{"step_id":"b","status":"running"}`), nil, nil, nil)
	if err := EachStepFrame("r", bad, func(sf *journal.StoredStep) {
		if _, _, err := journal.DecodeStep("r", sf); err == nil {
			t.Error("mismatched step record decoded")
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// Every field of an event and of a step, set, comes back through the
// frames as the stores write and read them (the run ID left out of the
// event and put back, the step folded).
func TestFramesKeepEveryField(t *testing.T) {
	t.Parallel()
	var e journal.Event
	var st journal.Step
	for _, v := range []any{&e, &st} {
		if _, err := journaltest.Fill(v); err != nil {
			t.Fatal(err)
		}
	}
	st.RunID = e.RunID
	row, scratch := EncodeEvent(nil, nil, &e)
	if len(scratch) == 0 {
		t.Fatal("EncodeEvent left scratch empty")
	}
	evs, err := DecodeEvents(nil, e.RunID, row, 0, -1)
	if err != nil || len(evs) != 1 {
		t.Fatalf("DecodeEvents = %v, %v", evs, err)
	}
	for _, d := range journaltest.Diff(e, *evs[0]) {
		t.Errorf("event through the frames: %s", d)
	}
	steps, _, enc := EncodeStep(nil, nil, &st, -1)
	if enc.OutputBlob != "" {
		t.Fatal("threshold -1 moved the output to a blob")
	}
	var fold Fold
	if err := fold.Add(st.RunID, steps); err != nil || len(fold.Last) != 1 {
		t.Fatalf("Fold = %v, %v", fold.Last, err)
	}
	back, _, err := journal.DecodeStep(st.RunID, &fold.Last[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range journaltest.Diff(st, *back) {
		t.Errorf("step through the frames: %s", d)
	}
}

// ReplaceStep swaps the frame of one step and keeps the others.
func TestReplaceStep(t *testing.T) {
	t.Parallel()
	var row []byte
	for _, id := range []string{"a", "b", "a"} {
		row, _, _ = EncodeStep(row, nil, &journal.Step{StepID: id, Status: trace.StepRunning}, -1)
	}
	out, hit, err := ReplaceStep(row, "a", journal.Version+1, []byte(`{"step_id":"a","status":"failed"}`))
	if err != nil || !hit {
		t.Fatalf("ReplaceStep = %v, %v", hit, err)
	}
	var got []string
	if err := EachStepFrame("r", out, func(sf *journal.StoredStep) {
		_, rec, err := journal.DecodeStep("r", sf)
		got = append(got, fmt.Sprintf("%s %s %v", sf.StepID, rec.Status, err != nil))
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a  true", "b running false", "a  true"}; !slices.Equal(got, want) {
		t.Errorf("after ReplaceStep: %q, want %q", got, want)
	}
	if _, hit, _ := ReplaceStep(row, "z", 1, nil); hit {
		t.Error("ReplaceStep hit a step the row does not hold")
	}
}

// The step record's hand-written JSON is what encoding/json writes.
func TestStepRecordJSON(t *testing.T) {
	t.Parallel()
	for _, r := range []journal.StepRecord{
		{StepID: "a", Status: trace.StepRunning},
		{StepID: "s\"<\u2028>", Type: "tool", Status: trace.StepSucceeded, Attempt: 3, OutputSHA: "ab", OutputBlob: true,
			InputBlob: "cd", Idempotent: true, StartedAt: -1, SettledAt: 1 << 62},
	} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&r); err != nil {
			t.Fatal(err)
		}
		if got := r.AppendJSON(nil); !bytes.Equal(got, bytes.TrimSpace(want.Bytes())) {
			t.Errorf("appendJSON\n got %s\nwant %s", got, want.Bytes())
		}
	}
}
