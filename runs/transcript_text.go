package runs

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/reinhq/rein/internal/agent"
)

// The text of an agent's transcript, shared by rein agent (its calls as
// they settle), rein runs show, and their Temporal forms. The types are
// package session's (Turn, Call, PlanRun, SubRun are aliases of these).

// Clip is s on one line (newlines made spaces), cut to at most n bytes at
// a rune boundary, with an ellipsis when it was longer.
func Clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// WriteTranscript writes an agent's turns after prefix: each turn's line
// (its tokens, the text it wrote beside its calls, or its answer), each
// call with its arguments, status and the start of its observation, and,
// when decisions holds one for a call (by agent.Ref), what a person
// decided on it.
func WriteTranscript(w io.Writer, prefix string, turns []agent.Turn, decisions map[string]agent.Decision) {
	for _, t := range turns {
		fmt.Fprintf(w, "%sturn %d (tokens %d/%d)", prefix, t.N, t.Usage.In, t.Usage.Out)
		if t.Final {
			fmt.Fprintf(w, ": answer %s\n", Clip(t.Text, 200))
			for _, g := range t.Guard {
				fmt.Fprintf(w, "%s  held for a person: %s guardrail %s tripped (on_trip: ask): %s\n", prefix, g.Side, g.Name, Clip(g.Reason, 200))
			}
			continue
		}
		if t.Text != "" {
			fmt.Fprintf(w, ": %s", Clip(t.Text, 200))
		}
		fmt.Fprintln(w)
		for i := range t.Calls {
			c := &t.Calls[i]
			WriteCall(w, fmt.Sprintf("%s  call %d ", prefix, c.Index), prefix+"    ", c)
			if d, ok := decisions[agent.Ref(t.N, c.Index)]; ok {
				fmt.Fprintf(w, "%s    decided: %s", prefix, d.Verdict)
				if d.Comment != "" {
					fmt.Fprintf(w, " (%s)", Clip(d.Comment, 120))
				}
				fmt.Fprintln(w)
			}
		}
	}
}

// WriteCall writes one call after prefix: tool, arguments, status, the
// observation's start and why it waits, then its plan run or sub-run
// (indented by subPrefix) when it made one.
func WriteCall(w io.Writer, prefix, subPrefix string, c *agent.Call) {
	fmt.Fprintf(w, "%s%s %s -> %s", prefix, c.Tool, Clip(c.Args, 120), c.Status)
	if c.Observation != "" {
		fmt.Fprintf(w, ": %s", Clip(c.Observation, 160))
	}
	if c.Reason != "" {
		fmt.Fprintf(w, " (%s)", c.Reason)
	}
	fmt.Fprintln(w)
	if c.PlanRun != nil {
		writePlanRun(w, subPrefix, c.PlanRun)
	}
	if c.Sub != nil {
		writeSubRun(w, subPrefix, c.Sub)
	}
}

// WriteLiveCall writes call c as one line after indent, as rein agent
// prints a call once it settles ("-> tool args -> status: observation"),
// then, when it ran a sub-agent, each call of the sub-run as one line
// under it ("-> agent: tool args -> status"); a handoff's line says who
// answered, not the answer, which the conversation shows.
func WriteLiveCall(w io.Writer, indent string, c *agent.Call) {
	if c.Sub == nil {
		WriteCall(w, indent+"-> ", indent+"  ", c)
		return
	}
	sr := c.Sub
	fmt.Fprintf(w, "%s-> %s %s -> ", indent, c.Tool, Clip(c.Args, 120))
	switch {
	case sr.Handoff && sr.Status == agent.SubAnswered:
		fmt.Fprintf(w, "%s answered", sr.Agent)
	case sr.Status == agent.SubHandedBack && sr.Back != nil:
		fmt.Fprintf(w, "%s handed the conversation back to %s", sr.Back.By, sr.Back.To)
	case c.Status == agent.StatusOK && !sr.Handoff && sr.Status == agent.SubAnswered:
		fmt.Fprintf(w, "%s: %s", c.Status, Clip(c.Observation, 160))
	default:
		fmt.Fprintf(w, "%s (agent %s %s", c.Status, sr.Agent, sr.Status)
		if sr.ErrorType != "" {
			fmt.Fprintf(w, ", %s: %s", sr.ErrorType, Clip(sr.Error, 160))
		}
		fmt.Fprint(w, ")")
	}
	fmt.Fprintln(w)
	for i := range sr.Turns {
		for j := range sr.Turns[i].Calls {
			sc := sr.Turns[i].Calls[j]
			if sc.Back != nil {
				continue // said on the line of the call it ended
			}
			sc.Tool = sr.Agent + ": " + sc.Tool
			WriteLiveCall(w, indent+"  ", &sc)
		}
	}
}

// writePlanRun writes the sub-run of an execute_plan call: its status and
// step budget, then each plan step.
func writePlanRun(w io.Writer, prefix string, r *agent.PlanRun) {
	if r.Status == agent.PlanRejected {
		fmt.Fprintf(w, "%splan rejected (%s): nothing ran (max_steps %d)\n", prefix, r.ErrorType, r.MaxSteps)
		return
	}
	fmt.Fprintf(w, "%splan %s: %d of max_steps %d tool calls", prefix, r.Status, r.Executed, r.MaxSteps)
	if r.ErrorType != "" {
		fmt.Fprintf(w, " (%s)", r.ErrorType)
	}
	fmt.Fprintln(w)
	for _, s := range r.Steps {
		fmt.Fprintf(w, "%s  %s %s -> %s", prefix, s.ID, s.Tool, s.Status)
		if s.Error != "" {
			fmt.Fprintf(w, ": %s", Clip(s.Error, 160))
		}
		fmt.Fprintln(w)
	}
}

// writeSubRun writes the sub-run of a call of an agent called as a tool,
// or of a handoff: who answered, its status and usage, then its own
// transcript, indented.
func writeSubRun(w io.Writer, prefix string, r *agent.SubRun) {
	what := "agent"
	if r.Handoff {
		what = "handed over to agent" // its answer is the caller's
	}
	fmt.Fprintf(w, "%s%s %s %s: %d turns, %d tool calls", prefix, what, r.Agent, r.Status, r.Usage.Turns, r.Usage.ToolCalls)
	if r.ErrorType != "" {
		fmt.Fprintf(w, " (%s: %s)", r.ErrorType, Clip(r.Error, 160))
	}
	fmt.Fprintln(w)
	WriteTranscript(w, prefix+"  ", r.Turns, nil)
}
