package temporal

import (
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// FuzzFoldHistory: whatever an activity's input and result payloads hold,
// the reader folds them or names the event it could not read; it never
// panics.
func FuzzFoldHistory(f *testing.F) {
	f.Add([]byte(`{"step":0,"attempt":1,"item":-1,"agent":{"unit":{"call":1}}}`), []byte(`{"agent":{"status":"answered","from":3,"turns":[{"n":1,"calls":[{"index":1}]}]}}`))
	f.Add([]byte(`{"step":-1,"attempt":1}`), []byte(`{"effects":[{"key":"k","outcome":"failed"}]}`))
	f.Add([]byte(`{`), []byte(`null`))
	f.Add([]byte(`{"agent":{"turns":[{"n":1}]}}`), []byte(`{"agent":{"from":-1}}`))
	dc := converter.GetDefaultDataConverter()
	f.Fuzz(func(t *testing.T, in, out []byte) {
		execs := synthetic(t, dc,
			synthAct{typ: "agent:a", id: "r/a/1/turn1", in: attemptIn{Item: -1, Agent: &agentIn{}}, out: &attemptOut{}},
			synthAct{typ: "call:t", id: "r/a/1/turn1/call1", in: attemptIn{Item: -1, Agent: &agentIn{}}, out: &attemptOut{}})
		for _, ev := range execs[0].Events {
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "call:t" {
				a.Input.Payloads[0] = &commonpb.Payload{Metadata: a.Input.Payloads[0].Metadata, Data: in}
			}
			if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil {
				a.Result.Payloads[0] = &commonpb.Payload{Metadata: a.Result.Payloads[0].Metadata, Data: out}
			}
		}
		h, err := foldHistory(dc, "r", execs)
		if err != nil {
			return
		}
		_ = effectsOf(h)
		_ = sessionsOf(h)
	})
}
