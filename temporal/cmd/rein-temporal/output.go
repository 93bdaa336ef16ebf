package main

import (
	"context"
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/temporal"
)

// The -o json (--output json) objects of the commands that follow a run
// (run, agent, runs approve|reject|settle|submit|retry) are those a local
// rein run and rein agent print (cmd/rein resultJSON, agentJSON), so that
// a program reading them reads a run on Temporal as it reads a local one:
// steps keyed by id, the error's class, step and message, and the
// approvals the run waits on, and the run's usage (an agent's: its
// turns', from the history). What the run's status does not hold is left
// out rather than given as zero: a step's duration, tokens and
// corrections (rein runs trace --temporal counts them from the history),
// an approval's id and creation time.

// resultJSON is the object rein run --output json prints.
type resultJSON struct {
	RunID   string                     `json:"run_id"`
	Flow    string                     `json:"flow"`
	Status  string                     `json:"status"`
	Outputs map[string]json.RawMessage `json:"outputs"`
	Steps   map[string]stepJSON        `json:"steps"`
	Usage   temporal.Usage             `json:"usage"`
	Error   *temporal.RunError         `json:"error"`
	Pending []pendingJSON              `json:"pending"`
	// Existing: the flow's idempotency: key returned a run started
	// earlier.
	Existing bool `json:"existing,omitempty"`
}

type stepJSON struct {
	Status   string             `json:"status"`
	Attempts int                `json:"attempts"`
	Error    *temporal.RunError `json:"error,omitempty"`
}

// pendingJSON is an approval the run waits on, with a local approval's
// field names (store.Approval): its step, kind and status (pending), the
// attempt it is for and why it waits (an unknown call, an escalation).
type pendingJSON struct {
	RunID   string `json:"run_id"`
	StepID  string `json:"step_id"`
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	Attempt int    `json:"attempt,omitempty"`
	Message string `json:"message,omitempty"`
}

// resultOf is st, with the approvals pend, as rein run --output json
// prints it.
func resultOf(st *temporal.Status, pend []temporal.Pending, existing bool) resultJSON {
	out := resultJSON{RunID: st.RunID, Flow: st.Flow, Status: st.Status, Outputs: st.Outputs, Steps: map[string]stepJSON{},
		Error: st.Error, Pending: pendingOf(st.RunID, pend), Existing: existing}
	if out.Outputs == nil {
		out.Outputs = map[string]json.RawMessage{}
	}
	if st.Usage != nil {
		out.Usage = *st.Usage
	}
	for _, s := range st.Steps {
		j := stepJSON{Status: s.Status, Attempts: s.Attempts}
		if s.Error != "" {
			j.Error = &temporal.RunError{Step: s.ID, Message: s.Error}
			if st.Error != nil && st.Error.Step == s.ID {
				j.Error.Class = st.Error.Class
			}
		}
		out.Steps[s.ID] = j
	}
	return out
}

func pendingOf(runID string, pend []temporal.Pending) []pendingJSON {
	out := make([]pendingJSON, 0, len(pend))
	for _, p := range pend {
		out = append(out, pendingJSON{RunID: runID, StepID: p.Step, Kind: p.Kind, Status: "pending", Attempt: p.Attempt, Message: p.Error})
	}
	return out
}

// agentResultJSON is the object rein agent --output json prints.
type agentResultJSON struct {
	RunID string `json:"run_id"`
	// Status is the run's, "answered" for a run that succeeded.
	Status  string             `json:"status"`
	Answer  any                `json:"answer"`
	Calls   []agentCallJSON    `json:"calls"`
	Usage   agent.Usage        `json:"usage"`
	Error   *temporal.RunError `json:"error"`
	Pending []pendingJSON      `json:"pending"`
}

type agentCallJSON struct {
	Turn        int             `json:"turn"`
	Tool        string          `json:"tool"`
	Args        json.RawMessage `json:"args"`
	Status      string          `json:"status"`
	Observation string          `json:"observation"`
}

// maxObservation clips a call's observation in agentCallJSON, as rein
// agent does.
const maxObservation = 200

// agentResultOf is an agent run's st, with its approvals pend and its
// calls (the transcript its history holds: temporal.Sessions), as rein
// agent --output json prints it.
func agentResultOf(ctx context.Context, c *common, cl client.Client, st *temporal.Status, pend []temporal.Pending) (agentResultJSON, error) {
	out := agentResultJSON{RunID: st.RunID, Status: st.Status, Calls: []agentCallJSON{}, Error: st.Error, Pending: pendingOf(st.RunID, pend)}
	if st.Status == "succeeded" {
		out.Status = "answered"
	}
	if raw, ok := st.Outputs[project.AgentStep]; ok {
		out.Answer = raw
	}
	ss, err := temporal.Sessions(ctx, cl, c.dataConverter(), c.namespace, st.RunID)
	if err != nil {
		return out, fmt.Errorf("run %s: its agent's calls: %w", st.RunID, err)
	}
	if len(ss) == 0 {
		return out, nil
	}
	out.Usage = agent.UsageOf(&agent.Session{Turns: ss[len(ss)-1].Turns})
	for _, t := range ss[len(ss)-1].Turns { // the latest attempt's
		for _, call := range t.Calls {
			args := json.RawMessage(call.Args)
			if !json.Valid(args) {
				args, _ = json.Marshal(call.Args)
			}
			out.Calls = append(out.Calls, agentCallJSON{Turn: t.N, Tool: call.Tool, Args: args, Status: string(call.Status),
				Observation: runs.Clip(call.Observation, maxObservation)})
		}
	}
	return out, nil
}
