package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/temporal"
)

// The commands that read a run's workflow history: rein runs effects and
// rein runs trace, and the transcripts rein runs show adds.

// runCmd is the command line of rein runs NAME RUN --temporal …: the run,
// -o, its flags and a client of the server.
type runCmd struct {
	c      common
	cl     client.Client
	run    string
	output string
}

// runCommand reads the command line of rein runs NAME RUN --temporal …
// (a usage error when any part is wrong) and dials the server.
func runCommand(name string, args []string) (*runCmd, error) {
	r := &runCmd{}
	fs := flag.NewFlagSet("runs "+name, flag.ContinueOnError)
	r.c.add(fs)
	fs.StringVar(&r.output, "o", "text", "text or json")
	fs.StringVar(&r.output, "output", "text", "the same as -o")
	pos, err := parse(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != 1 {
		return nil, usageErr("rein runs " + name + " --temporal takes RUN")
	}
	if err := checkOutput(r.output); err != nil {
		return nil, err
	}
	if r.cl, err = r.c.dial(); err != nil {
		return nil, err
	}
	r.run = pos[0]
	return r, nil
}

// dataConverter is the data converter dial gives the client: the blob
// store's, with --blobs, so that the history's references resolve.
func (c *common) dataConverter() converter.DataConverter {
	return temporal.NewDataConverter(c.keys, c.blobCodec())
}

// showEffects prints the calls of a run that touched the world, as rein
// runs effects does.
func showEffects(ctx context.Context, args []string, stdout io.Writer) (int, error) {
	r, err := runCommand("effects", args)
	if err != nil {
		return exitUsage, err
	}
	defer r.cl.Close()
	v, err := temporal.Effects(ctx, r.cl, r.c.dataConverter(), r.c.namespace, r.run)
	if err != nil {
		return exitFailed, fmt.Errorf("run %s: %w", r.run, err)
	}
	if v.Status == "running" {
		// the history says open; its status query says whether it waits.
		var st temporal.Status
		if temporal.Query(ctx, r.cl, r.run, temporal.QueryStatus, &st) == nil && st.Status != "" {
			v.Status = st.Status
		}
	}
	if r.output == "json" {
		return exitOK, encodeJSON(stdout, v)
	}
	writeEffects(stdout, v)
	return exitOK, nil
}

// writeEffects prints v in rein runs effects' shape, each call with its
// status on Temporal.
func writeEffects(w io.Writer, v *temporal.EffectsView) {
	n := len(v.Calls)
	what := "calls"
	if n == 1 {
		what = "call"
	}
	fmt.Fprintf(w, "run %s (%s, %s): %d %s with an effect\n", v.RunID, v.Flow, v.Status, n, what)
	for _, c := range v.Calls {
		head := fmt.Sprintf("%s %s %s", c.Key, orUnknown(c.Tool), orUnknown(c.Effect.Effect))
		if c.Reversibility != "" {
			head += " " + c.Reversibility
		}
		head += " " + c.Status
		if c.Outcome != "" && c.Outcome != "ok" {
			head += " (outcome " + c.Outcome + ")"
		}
		if c.State != "" {
			head += " [" + c.State + "]"
		}
		fmt.Fprintln(w, head)
		fmt.Fprintf(w, "  step %s, attempt %d, activity %s\n", c.StepID, c.Attempt, c.Activity)
		runs.WriteCallDetails(w, &c.EffectCall)
	}
	if len(v.Remediations) > 0 {
		fmt.Fprintln(w, "remediations:")
		for _, m := range v.Remediations {
			runs.WriteRemediation(w, &m)
		}
	}
}

// showTrace summarises a run's history as rein runs trace summarises a
// journal: slowest steps, tokens, retries, failures.
func showTrace(ctx context.Context, args []string, stdout io.Writer) (int, error) {
	r, err := runCommand("trace", args)
	if err != nil {
		return exitUsage, err
	}
	defer r.cl.Close()
	sum, err := temporal.Trace(ctx, r.cl, r.c.dataConverter(), r.c.namespace, r.run)
	if err != nil {
		return exitFailed, fmt.Errorf("run %s: %w", r.run, err)
	}
	if r.output == "json" {
		return exitOK, sum.WriteJSON(stdout)
	}
	return exitOK, sum.WriteText(stdout)
}

// orUnknown is s, or ? for what a call's activity has not reported yet.
func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// shown is rein runs show -o json's document: the run's view, and its
// agent steps' transcripts as a local rein runs show gives them (agents:
// the latest attempt's turns, by step) and in full (sessions: every
// attempt, with the people's decisions on its calls).
//
// It also carries what a local rein runs show --output json holds, under
// the same names, so that a program reads either: run (id, flow, status,
// created_at), steps as step rows (run_id, step_id, status, attempt, its
// output; besides this view's id and attempts) and approvals (those the
// run waits on, as rein run --output json's pending).
type shown struct {
	*temporal.RunView
	Run       shownRun                `json:"run"`
	Steps     []shownStep             `json:"steps"`
	Approvals []pendingJSON           `json:"approvals"`
	Agents    map[string][]agent.Turn `json:"agents,omitempty"`
	Sessions  []temporal.AgentSession `json:"sessions,omitempty"`
}

type shownRun struct {
	ID        string    `json:"id"`
	Flow      string    `json:"flow"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	ClosedAt  time.Time `json:"closed_at,omitzero"`
}

type shownStep struct {
	RunID  string `json:"run_id"`
	StepID string `json:"step_id"`
	ID     string `json:"id"`
	Status string `json:"status"`
	// Attempt is the local row's name, Attempts this view's.
	Attempt  int             `json:"attempt"`
	Attempts int             `json:"attempts,omitempty"`
	Output   json.RawMessage `json:"output,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// newShown is v's document, its steps and approvals in a local show's
// names too.
func newShown(v *temporal.RunView) *shown {
	s := &shown{RunView: v, Steps: []shownStep{}, Approvals: []pendingJSON{}}
	if v.Status == nil {
		return s
	}
	st := v.Status
	s.Run = shownRun{ID: st.RunID, Flow: st.Flow, Status: st.Status, CreatedAt: v.Started, ClosedAt: v.Closed}
	for _, x := range st.Steps {
		s.Steps = append(s.Steps, shownStep{RunID: st.RunID, StepID: x.ID, ID: x.ID, Status: x.Status, Attempt: x.Attempts,
			Attempts: x.Attempts, Output: st.Outputs[x.ID], Error: x.Error})
	}
	s.Approvals = pendingOf(st.RunID, v.Pending)
	return s
}

// withSessions adds v's agent sessions, read from its history.
func (r *runCmd) withSessions(ctx context.Context, v *temporal.RunView) (*shown, error) {
	ss, err := temporal.Sessions(ctx, r.cl, r.c.dataConverter(), r.c.namespace, r.run)
	if err != nil {
		return nil, fmt.Errorf("run %s: its agents' transcripts: %w", r.run, err)
	}
	s := newShown(v)
	s.Sessions = ss
	for _, x := range ss {
		if s.Agents == nil {
			s.Agents = map[string][]agent.Turn{}
		}
		s.Agents[x.Step] = x.Turns // sessionsOf orders attempts: the latest stays
	}
	return s, nil
}

// writeSessions prints each agent session's transcript as rein runs show
// prints an agent step's.
func writeSessions(w io.Writer, ss []temporal.AgentSession) {
	for _, s := range ss {
		if len(s.Turns) == 0 {
			continue
		}
		if s.Attempt > 1 {
			fmt.Fprintf(w, "transcript of %s (attempt %d):\n", s.Step, s.Attempt)
		} else {
			fmt.Fprintf(w, "transcript of %s:\n", s.Step)
		}
		runs.WriteTranscript(w, "  ", s.Turns, s.Decisions)
	}
}
