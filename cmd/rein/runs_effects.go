package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/graph"
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
		runs.WriteCallDetails(w, &c)
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
			runs.WriteRemediation(w, &m)
		}
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
