package journal_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/journal/journaltest"
)

// maxFuzzRecord bounds the fuzzed records: a stored record is one event or
// one step, far below this.
const maxFuzzRecord = 64 << 10

// FuzzReadEvent: any bytes read as an event or an error naming the run and
// the sequence number, never a panic; an event read back encodes to bytes
// that read back as the same event and encode the same again.
func FuzzReadEvent(f *testing.F) {
	var full journal.Event
	if _, err := journaltest.Fill(&full); err != nil {
		f.Fatal(err)
	}
	f.Add(journal.AppendEvent(nil, &full), uint64(journal.Version))
	f.Add([]byte(`{"seq":3,"time":"2026-12-04T10:00:00+01:00","kind":"step_settled","duration_ms":-0,"error":"\ud800"}`), uint64(1))
	f.Add([]byte(`{"seq":3,"duration_ms":1e-7,"tokens_in":12,"unknown":[1,{"a":null}]}`), uint64(1))
	f.Add([]byte(`{"seq":"3"}`), uint64(2))
	f.Add([]byte(`{"time":"9999-12-31T23:00:00-02:00"}`), uint64(1))
	f.Fuzz(func(t *testing.T, data []byte, version uint64) {
		if len(data) > maxFuzzRecord {
			return
		}
		e, err := journal.ReadEvent("r", 3, version, data)
		if err != nil {
			if !strings.Contains(err.Error(), "run r seq 3") {
				t.Fatalf("error %q does not name the run and the sequence number", err)
			}
			return
		}
		enc := journal.AppendEvent(nil, e)
		again, err := journal.ReadEvent("r", 3, journal.Version, enc)
		if err != nil {
			t.Fatalf("%s, read from %q, does not read back: %v", enc, data, err)
		}
		// Times come back in UTC; the instant is the same.
		if d := journaltest.Diff(*e, *again); len(d) > 0 && !(len(d) == 1 && strings.HasPrefix(d[0], "Event.Time") && e.Time.Equal(again.Time)) {
			t.Fatalf("%s read back differently: %v", enc, d)
		}
		if enc2 := journal.AppendEvent(nil, again); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, enc2)
		}
	})
}

// FuzzDecodeStep: any stored step decodes or fails with an error naming
// the run and the step, never a panic; a step decoded encodes to a record
// that decodes to the same step.
func FuzzDecodeStep(f *testing.F) {
	var full journal.Step
	if _, err := journaltest.Fill(&full); err != nil {
		f.Fatal(err)
	}
	e, _ := journal.EncodeStep(&full, -1, nil)
	f.Add(full.StepID, e.Rec, e.Output, uint64(journal.Version))
	f.Add("a", []byte(`{"step_id":"a","status":"running","started_at":-5}`), []byte(nil), uint64(1))
	f.Add("a", []byte(`{"step_id":"a","output_blob":true}`), []byte(`{}`), uint64(9))
	f.Fuzz(func(t *testing.T, stepID string, rec, output []byte, version uint64) {
		if len(rec)+len(output) > maxFuzzRecord {
			return
		}
		st, _, err := journal.DecodeStep("r", &journal.StoredStep{Version: version, StepID: stepID, Rec: rec, Output: output})
		if err != nil {
			if !strings.Contains(err.Error(), "run r step ") {
				t.Fatalf("error %q does not name the run and the step", err)
			}
			return
		}
		enc, _ := journal.EncodeStep(st, -1, nil)
		again, _, err := journal.DecodeStep("r", &journal.StoredStep{Version: journal.Version, StepID: st.StepID,
			Rec: enc.Rec, Output: enc.Output, Input: enc.Input, Error: enc.Error})
		if err != nil {
			t.Fatalf("%s does not decode again: %v", enc.Rec, err)
		}
		if d := journaltest.Diff(*st, *again); len(d) > 0 {
			t.Fatalf("%s decoded differently: %v", enc.Rec, d)
		}
	})
}
