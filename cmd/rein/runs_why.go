package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
)

func newRunsWhyCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	cmd := &cobra.Command{
		Use:   "why RUN STEP",
		Short: "Explain where each argument of a tool step's call came from",
		Long: `Print the provenance of each argument of tool step STEP of run RUN, as the
policy gate sees it: user (the run's input, a person's approval), constant
(text of the flow), inferred (a model wrote it), db (a tool that reads a
store), tool:<name> (another tool's output). It is worked out from the
flow the run pinned: which placeholders of the args template feed each
argument, and which kind of step produced each. Arguments not listed are
constants. Exit codes: 0 explained, 1 no such tool step, 2 bad usage.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, s, nil, func(ctx context.Context, runs *rein.Runs, dsn string) error {
				v, err := runs.Why(ctx, args[0], args[1])
				if err != nil {
					return runsError(s, dsn, args[0], err)
				}
				if f.output == "json" {
					return encodeJSON(s, v)
				}
				writeWhy(s.out, v)
				return nil
			})
		},
	}
	f.register(cmd)
	return cmd
}

func writeWhy(w io.Writer, v *rein.WhyView) {
	fmt.Fprintf(w, "step %s of run %s calls tool %s\n", v.StepID, v.RunID, v.Tool)
	writeArgOrigins(w, v.Args)
	if v.FallbackTool != "" {
		fmt.Fprintf(w, "its fallback calls tool %s\n", v.FallbackTool)
		writeArgOrigins(w, v.Fallback)
	}
}

func writeArgOrigins(w io.Writer, args []rein.ArgOrigin) {
	if len(args) == 0 {
		fmt.Fprintln(w, "  every argument is text of the flow (constant)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, a := range args {
		origins := make([]string, len(a.Origins))
		for i, o := range a.Origins {
			origins[i] = string(o)
		}
		ptr := a.Pointer
		if ptr == "" {
			ptr = "(the whole args)"
		}
		fmt.Fprintf(tw, "  %s\t%s\tfrom %s\n", ptr, strings.Join(origins, " + "), strings.Join(a.From, " "))
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "  (arguments not listed are text of the flow: constant)")
}

// writeGate prints the policy gate's decisions other than allow, and how
// many calls it allowed.
func writeGate(w io.Writer, ds []rein.GateDecision) {
	if len(ds) == 0 {
		return
	}
	allowed := 0
	fmt.Fprintln(w, "gate:")
	for _, d := range ds {
		if d.Verdict == "allow" {
			allowed++
			continue
		}
		place := d.StepID
		if d.PlanStep != "" {
			place += " plan step " + d.PlanStep
		}
		fmt.Fprintf(w, "  %s attempt=%d tool %s: %s, %s\n", place, d.Attempt, d.Tool, d.Verdict, d.Why)
	}
	fmt.Fprintf(w, "  %d %s allowed\n", allowed, pluralize(allowed, "call", "calls"))
}

// writeRisk prints the run's risk tier, each change with its reasons, and
// the reviewer's verdicts.
func writeRisk(w io.Writer, v *rein.RiskView) {
	if v == nil {
		return
	}
	fmt.Fprintf(w, "risk tier: %d\n", v.Tier)
	for _, c := range v.Changes {
		at := c.Stage
		if c.StepID != "" {
			at += " " + c.StepID
		}
		if c.Tool != "" {
			at += " tool " + c.Tool
		}
		fmt.Fprintf(w, "  %d → %d at %s\n", c.From, c.Tier, at)
		for _, r := range c.Reasons {
			fmt.Fprintf(w, "    %s\n", r)
		}
	}
	for _, r := range v.Reviews {
		fmt.Fprintf(w, "  review of %s attempt=%d tool %s: %s", r.StepID, r.Attempt, r.Tool, r.Verdict)
		if r.Reason != "" {
			fmt.Fprintf(w, ", %s", r.Reason)
		}
		fmt.Fprintln(w)
		for _, c := range r.Claims {
			mark := "unsupported"
			if c.Supported {
				mark = "supported"
			}
			fmt.Fprintf(w, "    %s: %q", mark, c.Claim)
			if c.Evidence != "" {
				fmt.Fprintf(w, " (%s)", c.Evidence)
			}
			fmt.Fprintln(w)
		}
	}
}
