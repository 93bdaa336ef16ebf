package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/journal/journaltest"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// Every field of an event and of a step, each set to a value of its own,
// is read back as it was committed: a field the backend's path drops fails
// here, named.
func testRecordsKeepEveryField(t *testing.T, h Harness) {
	s := open(t, h)
	var (
		e       trace.Event
		st, big store.Step
	)
	for _, v := range []any{&e, &st, &big} {
		if _, err := journaltest.Fill(v); err != nil {
			t.Fatal(err)
		}
	}
	const id = "run-every-field"
	e.Seq, e.RunID = 1, id
	st.RunID = id
	// big's payloads go to blobs; its OutputSHA is its output's digest, as
	// the engine sets it.
	big.RunID, big.StepID = id, "big"
	big.Output, big.Input = bigJSON("out", 2*store.DefaultBlobThreshold), bigJSON("in", 2*store.DefaultBlobThreshold)
	sum := sha256.Sum256(big.Output)
	big.OutputSHA = hex.EncodeToString(sum[:])
	r := create(t, s, &store.CreateRunParams{ID: id})
	commit(t, s, &store.Transition{RunID: id, Version: r.Version, Events: []*trace.Event{&e}, Steps: []*store.Step{&st, &big}})
	evs := events(t, s, id, 0, 0)
	if len(evs) != 1 {
		t.Fatalf("Events = %d events, want 1", len(evs))
	}
	for _, d := range journaltest.Diff(e, *evs[0]) {
		t.Errorf("event read back: %s", d)
	}
	sts := steps(t, s, id)
	if len(sts) != 2 {
		t.Fatalf("Steps = %d steps, want 2", len(sts))
	}
	for _, d := range journaltest.Diff(st, *sts[0]) {
		t.Errorf("step read back: %s", d)
	}
	for _, d := range journaltest.Diff(big, *sts[1]) {
		t.Errorf("step with payloads in blobs read back: %s", d)
	}
}

// A step record from a newer rein is refused with an error naming the run
// and the step and saying to upgrade rein; put back at the current version
// it reads again. A damaged one is an error naming them too.
func testNewerStepVersion(t *testing.T, h Harness) {
	if h.CorruptStep == nil {
		t.Skip("Harness.CorruptStep is nil")
	}
	s := open(t, h)
	r := create(t, s, &store.CreateRunParams{ID: "run-corrupt"})
	commit(t, s, &store.Transition{RunID: "run-corrupt", Version: r.Version, Steps: []*store.Step{
		{StepID: "a", Status: trace.StepSucceeded, Attempt: 1}, {StepID: "b", Status: trace.StepRunning, Attempt: 1},
	}})
	rec := []byte(`{"step_id":"a","status":"succeeded","attempt":1}`)
	for _, tc := range []struct {
		name    string
		version int
		rec     []byte
		want    []string
	}{
		{"newer", store.JournalVersion + 1, rec, []string{"run-corrupt", "step a", "newer", "upgrade rein"}},
		{"damaged", store.JournalVersion, []byte(`{"step_id":`), []string{"run-corrupt", "step a"}},
	} {
		h.CorruptStep(t, s, "run-corrupt", "a", tc.version, tc.rec)
		_, err := s.Steps(t.Context(), "run-corrupt")
		if err == nil {
			t.Fatalf("%s step record: Steps succeeded", tc.name)
		}
		if errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s step record: err is ErrNotFound: %v", tc.name, err)
		}
		if damaged := errors.Is(err, store.ErrDamaged); damaged != (tc.name == "damaged") {
			t.Errorf("%s step record: error %q: errors.Is(err, store.ErrDamaged) = %v, want it for the damaged one only", tc.name, err, damaged)
		}
		var ve *journal.VersionError
		if errors.As(err, &ve) != (tc.name == "newer") {
			t.Errorf("%s step record: error %q: a *journal.VersionError only for the newer one", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s step record: error %q does not say %q", tc.name, err, w)
			}
		}
	}
	h.CorruptStep(t, s, "run-corrupt", "a", store.JournalVersion, rec)
	if st := steps(t, s, "run-corrupt"); len(st) != 2 || st[0].Status != trace.StepSucceeded || st[1].StepID != "b" {
		t.Errorf("Steps after restoring the record = %s", jsonString(st))
	}
}
