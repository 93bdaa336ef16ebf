package runs

import (
	"errors"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// TestEffectsStateOfADispatch: a call's state in the effect graph (and so
// in the remediation plan) follows the latest record of its undo or
// compensation when the process stopped before the remediation record:
// dispatched (in doubt) while it only started, done or failed once it
// settled; a later remediation record (unknown, done) stands.
func TestEffectsStateOfADispatch(t *testing.T) {
	t.Parallel()
	specs := map[string]tool.Spec{"t": {Name: "t", Effect: tool.EffectWrite}}
	f, err := flow.Parse([]byte(`name: d
steps:
  - {id: a, tool: t, args: {}}
  - {id: b, tool: t, args: {}}
  - {id: c, tool: t, args: {}}
  - {id: d, tool: t, args: {}}
  - {id: e, tool: t, args: {}}
`), "d.yaml", &flow.Options{Tools: func(n string) (tool.Spec, bool) { s, ok := specs[n]; return s, ok }})
	if err != nil {
		t.Fatal(err)
	}
	var events []*trace.Event
	add := func(ev *trace.Event) {
		ev.Seq = int64(len(events) + 1)
		events = append(events, ev)
	}
	call := func(key, step, remedy string, status journal.CallStatus) {
		c := &journal.Call{StepID: step, Key: key, Item: -1, Attempt: 1, Remedy: remedy, Kind: journal.CallTool, Name: "t", Status: status}
		if remedy == "" || status == journal.CallSucceeded {
			c.Effect = &journal.DeclaredEffect{Effect: "write"}
		}
		add(&trace.Event{Kind: trace.CallRecorded, StepID: step, Status: string(status), Call: c})
	}
	remedied := func(key, step, status string) {
		data, err := journal.EncodeRemediation(&journal.Remediation{Premise: "a", Key: key, StepID: step, Tool: "t", Action: "compensate", Status: status})
		if err != nil {
			t.Fatal(err)
		}
		add(&trace.Event{Kind: trace.Remediated, StepID: step, Data: data})
	}
	for _, s := range []string{"a", "b", "c", "d", "e"} {
		call("r/"+s+"/1", s, "", journal.CallSucceeded)
	}
	call("r/a/1/compensate", "a", "compensate", journal.CallStarted) // dispatched, then the process stopped
	call("r/b/1/compensate", "b", "compensate", journal.CallStarted)
	call("r/b/1/compensate", "b", "compensate", journal.CallSucceeded) // returned; its record not written
	call("r/c/1/compensate", "c", "compensate", journal.CallStarted)
	call("r/c/1/compensate", "c", "compensate", journal.CallFailed)
	call("r/d/1/compensate", "d", "compensate", journal.CallStarted)
	remedied("r/d/1", "d", journal.RemedyUnknown) // a later remediation escalated it
	remedied("r/e/1", "e", journal.RemedyFailed)  // escalated, approved, made once more:
	call("r/e/1/compensate", "e", "compensate", journal.CallStarted)
	v, err := effectsView(&store.Run{ID: "r", Flow: "d"}, f, events)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"r/a/1": StateDispatched, "r/b/1": journal.RemedyDone, "r/c/1": journal.RemedyFailed,
		"r/d/1": journal.RemedyUnknown, "r/e/1": StateDispatched}
	for _, c := range v.Calls {
		if w, ok := want[c.Key]; ok && c.State != w {
			t.Errorf("call %s: state %q, want %q", c.Key, c.State, w)
		}
		delete(want, c.Key)
	}
	if len(want) != 0 {
		t.Errorf("calls missing from the view: %v", want)
	}
}

// TestEffectsOfADamagedRecord: a call_effect or remediation record that
// does not decode is store.ErrDamaged (exit 6), naming the run and seq,
// not an ordinary error.
func TestEffectsOfADamagedRecord(t *testing.T) {
	t.Parallel()
	f, err := flow.Parse([]byte("name: d\nsteps:\n  - {id: a, tool: t, args: {}}\n"), "d.yaml",
		&flow.Options{Tools: func(n string) (tool.Spec, bool) { return tool.Spec{Name: n}, true }})
	if err != nil {
		t.Fatal(err)
	}
	run := &store.Run{ID: "run-damaged", Flow: "d"}
	for _, kind := range []trace.Kind{trace.CallEffect, trace.Remediated} {
		events := []*trace.Event{{RunID: run.ID, Seq: 7, Kind: kind, StepID: "a", Data: `{"key":`}}
		_, err := effectsView(run, f, events)
		if !errors.Is(err, store.ErrDamaged) || !strings.Contains(err.Error(), "run-damaged seq 7") {
			t.Errorf("a %s record that does not decode: err = %v, want store.ErrDamaged naming run-damaged seq 7", kind, err)
		}
	}
}
