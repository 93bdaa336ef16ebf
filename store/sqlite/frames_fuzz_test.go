package sqlite

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinhq/rein/trace"
)

// FuzzFrames: a journal row of any bytes, plain or packed, reads back as
// records or as an error naming the run, never a panic; rows this binary
// writes read back.
func FuzzFrames(f *testing.F) {
	ev := trace.AppendJSON(nil, &trace.Event{Seq: 3, Kind: trace.StepSettled, RunID: "r", StepID: "a", Preview: strings.Repeat("p", 300)})
	evs := appendEvent(nil, 3, ev)
	steps := appendStep(nil, "a", []byte(`{"step_id":"a","status":"succeeded"}`), []byte(`1`), nil, nil)
	f.Add(evs, steps)
	f.Add([]byte{0x03, 0x01, 0xff}, []byte{0x01, 0x05, 'a'})
	packed, _, _, ok := pack(nil, nil, evs, steps)
	if !ok {
		f.Fatal("the seed row was not packed")
	}
	f.Add(packed, []byte(nil))
	f.Fuzz(func(t *testing.T, events, steps []byte) {
		if isPacked(events) {
			var err error
			if events, steps, _, err = unpack("r", events, nil); err != nil {
				if !strings.Contains(err.Error(), "run r") {
					t.Fatalf("unpack error %q does not name the run", err)
				}
				return
			}
		}
		if _, err := decodeEvents(nil, "r", events, 0, -1); err != nil && err.Error() == "" {
			t.Fatal("empty error")
		}
		_ = eachStepFrame("r", steps, func(sf *stepFrame) {
			if _, err := sf.decode("r"); err != nil && err.Error() == "" {
				t.Fatal("empty error")
			}
		})
	})
}

func TestFramesRoundTrip(t *testing.T) {
	t.Parallel()
	var row []byte
	for seq := int64(1); seq <= 3; seq++ {
		row = appendEvent(row, seq, trace.AppendJSON(nil, &trace.Event{Seq: seq, Kind: trace.StepStarted, RunID: "r"}))
	}
	evs, err := decodeEvents(nil, "r", row, 1, 1)
	if err != nil || len(evs) != 1 || evs[0].Seq != 2 {
		t.Fatalf("decodeEvents(after 1, limit 1) = %v, %v", evs, err)
	}
	if _, err := decodeEvents(nil, "r", row[:len(row)-1], 0, -1); err == nil {
		t.Error("a truncated row decoded")
	}
	steps := appendStep(nil, "a", []byte(`{"step_id":"a","status":"running"}`), []byte(`{"x":1}`), []byte(`in`), nil)
	var got []stepFrame
	if err := eachStepFrame("r", steps, func(sf *stepFrame) { got = append(got, *sf) }); err != nil || len(got) != 1 {
		t.Fatalf("eachStepFrame = %d, %v", len(got), err)
	}
	if rec, err := got[0].decode("r"); err != nil || rec.Status != trace.StepRunning || string(got[0].output) != `{"x":1}` || string(got[0].input) != "in" {
		t.Errorf("step frame = %+v %+v, %v", got[0], rec, err)
	}
	// a record naming another step than its frame is damage
	bad := appendStep(nil, "a", []byte(`{"step_id":"b","status":"running"}`), nil, nil, nil)
	eachStepFrame("r", bad, func(sf *stepFrame) {
		if _, err := sf.decode("r"); err == nil {
			t.Error("mismatched step record decoded")
		}
	})
}

// The step record's hand-written JSON is what encoding/json writes.
func TestStepRecordJSON(t *testing.T) {
	t.Parallel()
	for _, r := range []stepRecord{
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
		if got := r.appendJSON(nil); !bytes.Equal(got, bytes.TrimSpace(want.Bytes())) {
			t.Errorf("appendJSON\n got %s\nwant %s", got, want.Bytes())
		}
	}
}
