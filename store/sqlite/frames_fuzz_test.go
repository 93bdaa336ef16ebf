package sqlite

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store/internal/frames"
	"github.com/reinhq/rein/trace"
)

// FuzzFrames: a journal row of any bytes, plain or packed, reads back as
// records or as an error naming the run, never a panic; rows this binary
// writes read back.
func FuzzFrames(f *testing.F) {
	ev := trace.AppendJSON(nil, &trace.Event{Seq: 3, Kind: trace.StepSettled, RunID: "r", StepID: "a", Preview: strings.Repeat("p", 300)})
	evs := frames.AppendEvent(nil, 3, ev)
	steps := frames.AppendStep(nil, "a", []byte(`{"step_id":"a","status":"succeeded"}`), []byte(`1`), nil, nil)
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
		if _, err := frames.DecodeEvents(nil, "r", events, 0, -1); err != nil && err.Error() == "" {
			t.Fatal("empty error")
		}
		_ = frames.EachStepFrame("r", steps, func(sf *journal.StoredStep) {
			if _, _, err := journal.DecodeStep("r", sf); err != nil && err.Error() == "" {
				t.Fatal("empty error")
			}
		})
	})
}
