package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/trace"
)

func newRunsImpactCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	var premise string
	cmd := &cobra.Command{
		Use:   "impact RUN --premise ID",
		Short: "Show what a failed premise touched in a run, and what remediation would do",
		Long: `Compute the impact of a failed premise on run RUN: the steps that depend on it
(through the data they read or explicitly require, and through the resources
their calls wrote), and for each executed call with an effect what
rein runs remediate would do: undo (reversible), compensate (compensatable),
freeze (irreversible: mark its objects invalid, and ask a person when the
tool is tagged money, compliance or user-facing) or keep, and for each undo
or compensation its risk tier and who would let it through (the gate, the
reviewer, or a person's approval). ID names an
assumption a model declared with a call it chose (an agent call's or a plan
step's declaration: the call and what its affects name are affected), or a
step whose output is the false premise. Nothing is changed. Exit codes: 0 shown,
1 no such premise, 2 bad usage.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if premise == "" {
				return usageErr("--premise ID is required: the declared assumption or the step whose output turned out false")
			}
			return f.withStore(cmd, s, nil, func(ctx context.Context, c *rein.Client, dsn string) error {
				v, err := c.Runs().Impact(ctx, args[0], premise, nil)
				if err != nil {
					return runsError(s, dsn, args[0], err)
				}
				if f.output == "json" {
					return encodeJSON(s, v)
				}
				writeImpact(s.out, v)
				return nil
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&premise, "premise", "", "the premise that failed: a declared assumption's id, or a step id whose output is false")
	return cmd
}

func newRunsRemediateCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	var premise string
	cmd := &cobra.Command{
		Use:   "remediate RUN --premise ID",
		Short: "Take back what a failed premise touched in a run: undo, compensate, freeze",
		Long: `Carry out the impact of a failed premise on run RUN (rein runs impact shows it):
a run that has not finished is cancelled first, so no step starts; each
affected call is undone or compensated with its tool's registered
compensation, through the policy gate and, when the flow has risk tiers,
the controls of the compensation's own tier (tier 1-2 at once; tier 3 the
reviewer, or a person without one; tier 4 a person's approval, which the run
waits for), or frozen (its objects marked invalid
in the journal, and escalated to a person when the tool is tagged money,
compliance or user-facing). Every action is journaled with what it touched
(rein runs effects). A compensation that fails is escalated, not retried:
the run waits for rein runs approve|reject|settle RUN ID. Calls remediated
before are not acted on again: each undo or compensation is journaled as
dispatched before its tool runs, so after a crash running remediate again
makes none twice (one in doubt is made again with the same key when its
tool is idempotent or read-only, and is otherwise escalated as unknown).
Exit codes: 0 remediated, 3 escalated (the
run waits for a person), 1 no such premise, 2 bad usage, 4 another process
holds the run.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if premise == "" {
				return usageErr("--premise ID is required: the declared assumption or the step whose output turned out false")
			}
			return f.withStore(cmd, s, nil, func(ctx context.Context, c *rein.Client, dsn string) error {
				m, err := c.Remediate(ctx, args[0], premise, nil)
				if err != nil {
					return runsError(s, dsn, args[0], err)
				}
				if f.output == "json" {
					if err := encodeJSON(s, m); err != nil {
						return err
					}
				} else {
					writeImpact(s.out, m.Impact)
					writeRemediated(s.out, m, dsn)
				}
				if m.Run.Run.Status == trace.RunWaiting {
					return &exitError{code: exitWaiting}
				}
				return nil
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&premise, "premise", "", "the premise that failed: a declared assumption's id, or a step id whose output is false")
	return cmd
}

func writeImpact(w io.Writer, v *runs.ImpactView) {
	fmt.Fprintf(w, "premise %s (%s) of run %s affects steps: %s\n", v.Premise, v.Source, v.RunID, strings.Join(v.Steps, ", "))
	for _, c := range v.Claims {
		fmt.Fprintf(w, "  assumed: %s\n", c)
	}
	if len(v.DeclaredBy) > 0 {
		fmt.Fprintf(w, "  declared by: %s\n", strings.Join(v.DeclaredBy, ", "))
	}
	for _, c := range v.Calls {
		line := fmt.Sprintf("  %-10s %s %s (%s): %s", c.Action, c.Key, c.Tool, c.Effect, c.Why)
		if c.State != "" {
			line += " [" + c.State + "]"
		}
		fmt.Fprintln(w, line)
		if c.Compensation != nil {
			fmt.Fprintf(w, "             %s\n", runs.CompensationLine(c.Compensation))
		}
		if len(c.Invalid) > 0 {
			fmt.Fprintf(w, "             marks invalid: %s\n", strings.Join(c.Invalid, ", "))
		}
		if c.Escalates {
			fmt.Fprintln(w, "             escalates to a person")
		}
		if c.Tier > 0 {
			fmt.Fprintf(w, "             risk tier %d, let through by: %s\n", c.Tier, controlWords[c.Control])
		}
	}
}

// controlWords says who lets a remediation through (runs.ImpactCall.Control).
var controlWords = map[string]string{
	journal.ControlAutomatic: "the gate (at once)",
	journal.ControlReviewer:  "the reviewer (a person if it does not find it supported)",
	journal.ControlPerson:    "a person's approval",
}

func writeRemediated(w io.Writer, m *rein.Remediation, dsn string) {
	fmt.Fprintf(w, "run %s is %s\n", m.Run.Run.ID, m.Run.Run.Status)
	writePending(w, m.Run.Run.ID, dsn, m.Run.Pending(), m.Run.NeedsTools)
}
