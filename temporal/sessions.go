package temporal

import (
	"context"
	"slices"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/reinhq/rein/internal/agent"
)

// AgentSession is one attempt of an agent step as the run's history holds
// it: its transcript (the turns, each call with its args, status,
// observation and why it waited) as the workflow held it after the last
// unit that settled, and the people's decisions on its calls, by ref
// (turn<t>/call<c>). rein runs show --temporal prints it as a local rein
// runs show prints an agent step's transcript.
type AgentSession struct {
	Step      string                    `json:"step"`
	Attempt   int                       `json:"attempt"`
	Turns     []agent.Turn              `json:"turns"`
	Decisions map[string]agent.Decision `json:"decisions,omitempty"`
}

// Sessions reads run runID's history and returns its agent steps'
// sessions, by step order then attempt. dc is the client's data converter.
func Sessions(ctx context.Context, c client.Client, dc converter.DataConverter, ns, runID string) ([]AgentSession, error) {
	execs, err := ReadHistory(ctx, c, ns, runID)
	if err != nil {
		return nil, err
	}
	h, err := foldHistory(dc, runID, execs)
	if err != nil {
		return nil, err
	}
	return sessionsOf(h), nil
}

// AgentSessionNow asks run runID's workflow for the session of its agent
// step (by index in the flow) as it holds it now, at whichever attempt
// is current: what rein agent --temporal prints each call from as it
// settles. It fails when the step has not started (or the run's workflow
// is closed and no worker can answer the query); Sessions reads a closed
// run's from its history.
func AgentSessionNow(ctx context.Context, c client.Client, runID, step string, index int) (*AgentSession, error) {
	v, err := c.QueryWorkflow(ctx, runID, "", QueryAgentSession, index, 0)
	if err != nil {
		return nil, err
	}
	var s agentSession
	if err := v.Get(&s); err != nil {
		return nil, err
	}
	return &AgentSession{Step: step, Attempt: s.Attempt, Turns: s.Turns, Decisions: s.Decisions}, nil
}

// sessionsOf folds the agent units of h as the workflow folds them
// (runAgent, agentCalls): a turn unit's result replaces the turns from its
// From on, a call unit's result its call of the last turn. A session
// first seen in a later execution (continue-as-new) starts from the turns
// its unit's input carries.
func sessionsOf(h *runHistory) []AgentSession {
	type at struct{ step, attempt int }
	byKey := map[at]*AgentSession{}
	var order []at
	for _, a := range h.Activities {
		in := a.In.Agent
		if in == nil {
			continue
		}
		k := at{a.In.Step, a.In.Attempt}
		s := byKey[k]
		if s == nil {
			s = &AgentSession{Step: h.stepID(a.In.Step), Attempt: a.In.Attempt, Turns: cloneTurns(in.Turns)}
			byKey[k] = s
			order = append(order, k)
		}
		if len(in.Decisions) > 0 {
			s.Decisions = in.Decisions
		}
		if a.Out == nil || a.Out.Agent == nil {
			continue
		}
		out := a.Out.Agent
		if c := in.Unit.Call; c > 0 {
			last := len(s.Turns) - 1
			if n := len(out.Turns); n > 0 && last >= 0 && out.Turns[n-1].N == s.Turns[last].N && c <= len(out.Turns[n-1].Calls) && c <= len(s.Turns[last].Calls) {
				s.Turns[last].Calls[c-1] = out.Turns[n-1].Calls[c-1]
			}
			continue
		}
		base := s.Turns
		if len(base) < out.From {
			base = cloneTurns(in.Turns)
		}
		from := max(0, min(out.From, len(base)))
		s.Turns = append(base[:from:from], cloneTurns(out.Turns)...)
	}
	slices.SortStableFunc(order, func(a, b at) int {
		if a.step != b.step {
			return a.step - b.step
		}
		return a.attempt - b.attempt
	})
	out := make([]AgentSession, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	return out
}

// cloneTurns copies turns and their calls, so that settling a call of the
// copy leaves the decoded input it came from alone.
func cloneTurns(turns []agent.Turn) []agent.Turn {
	out := slices.Clone(turns)
	for i := range out {
		out[i].Calls = slices.Clone(out[i].Calls)
	}
	return out
}
