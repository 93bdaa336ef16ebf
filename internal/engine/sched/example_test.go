package sched_test

import (
	"context"
	"fmt"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/tool"
)

// Example drives the machine without the engine's runner, as a workflow
// engine would: it asks for commands, "runs" each step (here: a table of
// outcomes; in Temporal, an activity), feeds the outcome and the clock
// back, and waits when a retry says so (in Temporal, a timer).
func Example() {
	f, err := flow.Parse([]byte(`name: order
steps:
  - {id: fetch, tool: http, args: {}, retries: 2, backoff: {initial: 1s, max: 4s, multiplier: 2}}
  - {id: refund, tool: pay, args: {}, when: "fetch.total > 100"}
  - {id: notify, tool: mail, args: {}, requires: [fetch]}
`), "order.yaml", &flow.Options{Tools: func(name string) (tool.Spec, bool) { return tool.Spec{Name: name}, true }})
	if err != nil {
		panic(err)
	}
	// the activities: fetch fails once with a transient error.
	fails := map[string]int{"fetch": 1}
	outputs := map[string]any{"fetch": map[string]any{"total": 40.0}, "notify": map[string]any{"sent": true}}

	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := sched.New(f, "run-1")
	m.Seed()
	env := map[string]any{} // what when expressions read: settled outputs by id
	for {
		cmd := m.Next(0) // one step at a time: nothing is in flight
		if cmd.Op == sched.Finish {
			break
		}
		s := f.Steps[cmd.Step]
		switch adm := m.Admit(context.Background(), cmd.Step, env); adm.Verdict {
		case sched.Skip:
			fmt.Printf("skip %s: %s\n", s.ID, adm.Reason)
			m.Settle(cmd.Step, journal.StepSkipped, 0, "")
			continue
		case sched.Fail:
			fmt.Printf("fail %s: %s\n", s.ID, adm.Reason)
			m.Settle(cmd.Step, journal.StepFailed, 0, "")
			continue
		}
		attempt, retries := 1, 0
		for {
			m.Start(cmd.Step, attempt)
			fmt.Printf("start %s attempt %d at %s\n", s.ID, attempt, now.Format("15:04:05.000"))
			if fails[s.ID] < attempt {
				break
			}
			next := m.Retry(cmd.Step, fault.Transient, attempt, retries, 0, false, now)
			if !next.Again {
				panic("not retried")
			}
			retries++
			attempt, now = next.Attempt, next.At // a timer until next.At
		}
		env[s.ID] = outputs[s.ID]
		m.Settle(cmd.Step, journal.StepSucceeded, attempt, "sha-"+s.ID)
	}
	status := m.Outcome(false, "", false)
	m.SettleRun(status)
	fmt.Println("run", status)
	// Output:
	// start fetch attempt 1 at 00:00:00.000
	// start fetch attempt 2 at 00:00:00.958
	// skip refund: when "fetch.total > 100" was false
	// start notify attempt 1 at 00:00:00.958
	// run succeeded
}
