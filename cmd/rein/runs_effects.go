package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/graph"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/runs"
)

func newRunsEffectsCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	cmd := &cobra.Command{
		Use:   "effects RUN",
		Short: "List the calls of a run that touched the world: what each read, wrote and sent",
		Long: `Print the effect graph of run RUN as its journal recorded it: every call of a
tool with an effect (read, write, external, destructive), in the order the
calls returned, with its idempotency key, the resources it read, wrote or
sent (the tool's resources: rendered over the call), where each argument
came from, and the compensation that would take it back (undo or
compensate, rendered over the call's args and output); then the data edges
between the calls and the remediations done since. rein graph --run RUN
draws it. Exit codes: 0 listed, 1 the run's flow does not load, 2 bad usage.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, s, nil, func(ctx context.Context, c *rein.Client, dsn string) error {
				v, err := c.Runs().Effects(ctx, args[0])
				if err != nil {
					return runsError(s, dsn, args[0], err)
				}
				if f.output == "json" {
					return encodeJSON(s, v)
				}
				writeEffects(s.out, v)
				return nil
			})
		},
	}
	f.register(cmd)
	return cmd
}

func writeEffects(w io.Writer, v *runs.EffectsView) {
	fmt.Fprintf(w, "run %s (%s, %s): %d %s with an effect\n", v.RunID, v.Flow, v.Status, len(v.Calls), pluralize(len(v.Calls), "call", "calls"))
	for _, c := range v.Calls {
		head := fmt.Sprintf("%s %s %s", c.Key, c.Tool, c.Effect.Effect)
		if c.Reversibility != "" {
			head += " " + c.Reversibility
		}
		if c.Outcome != "ok" {
			head += " (outcome " + c.Outcome + ")"
		}
		if c.State != "" {
			head += " [" + c.State + "]"
		}
		fmt.Fprintln(w, head)
		writeList(w, "reads", c.Reads)
		writeList(w, "writes", c.Writes)
		writeList(w, "sends", c.Sends)
		writeList(w, "unrendered", c.Unrendered)
		if len(c.Tags) > 0 {
			fmt.Fprintf(w, "  tags: %s\n", strings.Join(c.Tags, ", "))
		}
		for _, p := range c.Provenance {
			ptr := p.Pointer
			if ptr == "" {
				ptr = "(the whole args)"
			}
			fmt.Fprintf(w, "  arg %s from %s\n", ptr, strings.Join(p.Origins, " + "))
		}
		if cp := c.Compensation; cp != nil {
			fmt.Fprintf(w, "  %s\n", compensationLine(cp))
		}
	}
	if len(v.Data) > 0 {
		fmt.Fprintln(w, "data:")
		for _, d := range v.Data {
			fmt.Fprintf(w, "  %s -> %s\n", d.From, d.To)
		}
	}
	if len(v.Remediations) > 0 {
		fmt.Fprintln(w, "remediations:")
		for _, m := range v.Remediations {
			writeRemediation(w, &m)
		}
	}
}

func compensationLine(cp *journal.Compensation) string {
	if cp.Error != "" {
		return fmt.Sprintf("%s: %s (cannot be made: %s)", cp.Kind, cp.Tool, cp.Error)
	}
	return fmt.Sprintf("%s: %s %s", cp.Kind, cp.Tool, cp.Args)
}

func writeRemediation(w io.Writer, m *journal.Remediation) {
	line := fmt.Sprintf("  %s %s %s: %s", m.Key, m.Action, m.Tool, m.Status)
	if m.Premise != "" {
		line += " (premise " + m.Premise + ")"
	}
	fmt.Fprintln(w, line)
	if m.Call != nil {
		fmt.Fprintf(w, "    called %s %s\n", m.Call.Tool, m.Call.Args)
	}
	if m.Tier > 0 {
		fmt.Fprintf(w, "    risk tier %d, let through by: %s\n", m.Tier, m.Control)
	}
	writeList(w, "  touched", m.Touched)
	writeList(w, "  invalid", m.Invalid)
	if m.Escalation != "" {
		fmt.Fprintf(w, "    escalated: a person decides (rein runs approve|reject|settle RUN %s)\n", m.Escalation)
	}
	if m.Decision != "" {
		fmt.Fprintf(w, "    decided: %s %s (by %s)\n", m.Decision, m.Comment, orCLI(m.DecidedBy))
	}
	if m.Error != "" {
		fmt.Fprintf(w, "    error: %s\n", m.Error)
	}
}

func writeList(w io.Writer, what string, items []string) {
	if len(items) > 0 {
		fmt.Fprintf(w, "  %s: %s\n", what, strings.Join(items, ", "))
	}
}

// effectsGraph is v as the graph package draws it.
func effectsGraph(v *runs.EffectsView) *graph.Effects {
	g := &graph.Effects{Title: "run " + v.RunID + " (" + v.Flow + ")"}
	for _, c := range v.Calls {
		g.Calls = append(g.Calls, graph.EffectCall{Effect: c.Effect, State: c.State})
	}
	for _, d := range v.Data {
		g.Data = append(g.Data, [2]string{d.From, d.To})
	}
	return g
}
