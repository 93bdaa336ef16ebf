package fault_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/reinhq/rein/fault"
)

type pointed struct{ error }

func (pointed) ErrorPointer() string { return "/input/city" }

// One envelope and one retryable rule for every surface.
func TestEnvelopeOf(t *testing.T) {
	t.Parallel()
	held := fault.Hinted(fault.Conflict, fault.Hint{Code: fault.HintHeldByAnotherProcess, RunID: "r1", Owner: "w2"}, errors.New("run r1 is held"))
	finished := fault.Hinted(fault.Conflict, fault.Hint{Code: fault.HintRunFinished, RunID: "r1", Status: "succeeded"}, errors.New("run r1 already succeeded"))
	for _, c := range []struct {
		name      string
		err       error
		want      string
		retryable bool
	}{
		{"unclassified is business", errors.New("boom"),
			`{"class":"business","error_type":"business","message":"boom","retryable":false}`, false},
		{"transient", fmt.Errorf("call: %w", fault.TransientErr(errors.New("503"))),
			`{"class":"transient","error_type":"transient","message":"call: 503","retryable":true}`, true},
		{"a deadline is transient", context.DeadlineExceeded,
			`{"class":"transient","error_type":"transient","message":"context deadline exceeded","retryable":true}`, true},
		{"a held run may be retried", fmt.Errorf("resume: %w", held),
			`{"class":"conflict","error_type":"conflict","message":"resume: run r1 is held","hint":{"code":"held_by_another_process","run_id":"r1","owner":"w2"},"retryable":true}`, true},
		{"a finished run never", finished,
			`{"class":"conflict","error_type":"conflict","message":"run r1 already succeeded","hint":{"code":"run_finished","run_id":"r1","status":"succeeded"},"retryable":false}`, false},
		{"a pointer", pointed{fault.BusinessErr(errors.New("city is missing"))},
			`{"class":"business","error_type":"business","message":"city is missing","retryable":false,"pointer":"/input/city"}`, false},
		{"damaged", fault.New(fault.Damaged, errors.New("the run store is damaged")),
			`{"class":"damaged","error_type":"damaged","message":"the run store is damaged","retryable":false}`, false},
	} {
		b, err := json.Marshal(fault.EnvelopeOf(c.err))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, b, c.want)
		}
		if fault.Retryable(c.err) != c.retryable {
			t.Errorf("%s: Retryable = %v", c.name, !c.retryable)
		}
		var fe *fault.Error
		if errors.As(c.err, &fe) && fe.Retryable() != fault.Retryable(c.err) && fe.Hint.Code != "" {
			t.Errorf("%s: the method and the rule disagree", c.name)
		}
	}
	if e := fault.EnvelopeOf(nil); e != (fault.Envelope{}) {
		t.Errorf("nil: %+v", e)
	}
}
