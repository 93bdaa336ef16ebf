package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/safety"
)

func newRunsWhyCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	cmd := &cobra.Command{
		Use:   "why RUN [STEP]",
		Short: "Explain a run: its guardrail trips and log-only rules, or where each argument of a step's tool calls came from",
		Long: `Without STEP, explain run RUN as a whole: each guardrail that tripped (its
step, kind, side, what it did — stop or ask a person — and why, in the
guardrail's words, never the text it tripped on), the log-only policy
rules (enforce: false) that held on its calls and how many times, and its
failed attempts.

With STEP, print the provenance of each argument of the tool calls of step STEP of run
RUN, as the policy gate sees it: user (the run's input, a person's
approval), constant (text of the flow), inferred (a model wrote it), db (a
tool that reads a store), tool:<name> (another tool's output).

For a tool step it is worked out from the flow the run pinned: which
placeholders of the args template feed each argument, and which kind of
step produced each; arguments not listed are constants. An inferred
argument that a read tool's result of the run confirmed is listed as
verified, with that result (gated runs).

For an agent step it lists each call its model chose, turn by turn, and
for a plan step (or an agent's execute_plan) each plan step: the runtime
traced each argument the model wrote to the user's input or a tool
output of the run (inferred when found in neither), and checked the
call's declaration — each fact against its source. Plan steps are
explained for gated runs (their trace rides with the gate's decisions).

It then lists the step's failed attempts, each with its error's cause
chain: the errors it wraps, a tool's stderr tail, a provider's error
body (bounded and redacted), and the failed premises that paused the run
at the step (its output's, or one of its tool calls'). An agent or llm
step's guardrail trips are listed too (an llm step is explained for its
guardrails only).
Exit codes: 0 explained, 1 no such step, 2 bad usage.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, s, nil, func(ctx context.Context, c *rein.Client, dsn string) error {
				if len(args) == 1 {
					v, err := c.Runs().WhyRun(ctx, args[0])
					if err != nil {
						return runsError(s, dsn, args[0], err)
					}
					if f.output == "json" {
						return encodeJSON(s, v)
					}
					writeRunWhy(s.out, v)
					return nil
				}
				v, err := c.Runs().Why(ctx, args[0], args[1])
				if err != nil {
					return runsError(s, dsn, args[0], err)
				}
				if f.output == "json" {
					return encodeJSON(s, v)
				}
				writeWhy(s.out, v)
				writeInvalidated(s.out, v.Invalidated)
				writeFailures(s.out, v.Failures)
				writePremises(s.out, v.Premises, false)
				return nil
			})
		},
	}
	f.register(cmd)
	return cmd
}

func writeWhy(w io.Writer, v *runs.WhyView) {
	if v.Tool == "" {
		writeCallsWhy(w, v)
		return
	}
	fmt.Fprintf(w, "step %s of run %s calls tool %s\n", v.StepID, v.RunID, v.Tool)
	writeArgOrigins(w, v.Args)
	writeVerified(w, v.Verified)
	if v.FallbackTool != "" {
		fmt.Fprintf(w, "its fallback calls tool %s\n", v.FallbackTool)
		writeArgOrigins(w, v.Fallback)
	}
}

// writeCallsWhy prints the calls a model chose in an agent or plan step.
func writeCallsWhy(w io.Writer, v *runs.WhyView) {
	if v.Guardrail != "" {
		fmt.Fprintf(w, "step %s of run %s was stopped by a guardrail: %s\n", v.StepID, v.RunID, v.Guardrail)
	}
	writeGuardrails(w, v.Guardrails)
	if len(v.Calls) == 0 && len(v.Guardrails) > 0 {
		return
	}
	if len(v.Calls) == 0 {
		fmt.Fprintf(w, "step %s of run %s made no traced tool call\n", v.StepID, v.RunID)
		return
	}
	fmt.Fprintf(w, "step %s of run %s: the tool calls a model chose\n", v.StepID, v.RunID)
	for _, c := range v.Calls {
		fmt.Fprintf(w, "%s  tool %s (%s)\n", c.Ref, c.Tool, c.Status)
		if len(c.Args) == 0 {
			fmt.Fprintln(w, "  no arguments")
		} else {
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			for _, a := range c.Args {
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", pointerOrWhole(a.Pointer), joinOrigins(a.Origins), strings.Join(a.From, ", "))
			}
			_ = tw.Flush()
		}
		writeVerified(w, c.Verified)
		if c.Declaration == nil {
			fmt.Fprintln(w, "  declaration: none")
			continue
		}
		fmt.Fprintf(w, "  declaration: %s\n", c.Declaration.Action)
		for k, f := range c.Declaration.Facts {
			verdict := "unchecked"
			if k < len(c.Claims) {
				verdict = "unverified: " + c.Claims[k].Evidence
				if c.Claims[k].Supported {
					verdict = "verified: " + c.Claims[k].Evidence
				}
			}
			fmt.Fprintf(w, "    fact %q (source %s) %s\n", f.Claim, f.Source, verdict)
		}
		for _, a := range c.Declaration.Assumptions {
			fmt.Fprintf(w, "    assumes %q (affects %s)\n", a.Claim, strings.Join(a.Affects, ", "))
		}
	}
}

// writeVerified prints which tool result verified which argument.
func writeVerified(w io.Writer, vs []safety.Verification) {
	for _, v := range vs {
		field := ""
		if v.Field != "" {
			field = " at " + v.Field
		}
		fmt.Fprintf(w, "  %s verified by the output of tool %s (%s)%s\n", pointerOrWhole(v.Pointer), v.Tool, v.Ref, field)
	}
}

func pointerOrWhole(ptr string) string {
	if ptr == "" {
		return "(the whole args)"
	}
	return ptr
}

func joinOrigins(os []safety.Origin) string {
	s := make([]string, len(os))
	for i, o := range os {
		s[i] = string(o)
	}
	return strings.Join(s, " + ")
}

func writeArgOrigins(w io.Writer, args []runs.ArgOrigin) {
	if len(args) == 0 {
		fmt.Fprintln(w, "  every argument is text of the flow (constant)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, a := range args {
		fmt.Fprintf(tw, "  %s\t%s\tfrom %s\n", pointerOrWhole(a.Pointer), joinOrigins(a.Origins), strings.Join(a.From, " "))
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "  (arguments not listed are text of the flow: constant)")
}

// writeGate prints the policy gate's decisions other than allow, and how
// many calls it allowed.
func writeGate(w io.Writer, ds []runs.GateDecision) {
	if len(ds) == 0 {
		return
	}
	allowed, watched := 0, 0
	fmt.Fprintln(w, "gate:")
	for _, d := range ds {
		place := d.StepID
		if d.PlanStep != "" {
			place += " plan step " + d.PlanStep
		}
		for _, l := range d.LogOnly {
			watched++
			fmt.Fprintf(w, "  %s attempt=%d tool %s: log-only %s (not applied), %s\n", place, d.Attempt, d.Tool, l.Verdict, l.Why)
		}
		if d.Verdict == "allow" {
			allowed++
			continue
		}
		fmt.Fprintf(w, "  %s attempt=%d tool %s: %s, %s\n", place, d.Attempt, d.Tool, d.Verdict, d.Why)
	}
	fmt.Fprintf(w, "  %d %s allowed\n", allowed, pluralize(allowed, "call", "calls"))
	if watched > 0 {
		fmt.Fprintf(w, "  %d log-only %s held (enforce: false)\n", watched, pluralize(watched, "rule", "rules"))
	}
}

// writeRisk prints the run's risk tier, each change with its reasons, and
// the reviewer's verdicts.
func writeRisk(w io.Writer, v *runs.RiskView) {
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

// writeGuardrails prints guardrail trips, one a line.
func writeGuardrails(w io.Writer, gs []runs.GuardrailWhy) {
	if len(gs) == 0 {
		return
	}
	fmt.Fprintln(w, "guardrails:")
	for _, g := range gs {
		at := "step " + g.StepID
		if g.Turn > 0 {
			at += fmt.Sprintf(" turn %d", g.Turn)
		}
		kind := ""
		if g.Kind != "" {
			kind = " (" + g.Kind + ")"
		}
		did := "stopped the step"
		if g.OnTrip == "ask" {
			did = "asked a person (on_trip: ask)"
		}
		fmt.Fprintf(w, "  %s attempt=%d: %s guardrail %s%s tripped and %s: %s\n", at, g.Attempt, g.Side, g.Name, kind, did, g.Reason)
	}
}

// writeRunWhy prints rein runs why RUN: the run's guardrail trips, its
// log-only rules, its failed attempts.
func writeRunWhy(w io.Writer, v *runs.RunWhyView) {
	fmt.Fprintf(w, "run %s (%s)\n", v.RunID, v.Status)
	if len(v.Guardrails) == 0 {
		fmt.Fprintln(w, "no guardrail tripped")
	}
	writeGuardrails(w, v.Guardrails)
	if v.LogOnly > 0 {
		fmt.Fprintf(w, "log-only rules (enforce: false) held %d %s, not applied:\n", v.LogOnly, pluralize(v.LogOnly, "time", "times"))
		for _, d := range v.Logged {
			place := d.StepID
			if d.PlanStep != "" {
				place += " plan step " + d.PlanStep
			}
			for _, l := range d.LogOnly {
				fmt.Fprintf(w, "  %s attempt=%d tool %s: would %s, %s\n", place, d.Attempt, d.Tool, l.Verdict, l.Why)
			}
		}
	}
	writeFailures(w, v.Failures)
	writeInvalidated(w, v.Invalidated)
	writePremises(w, v.Premises, true)
}

// writePremises prints the failed premises that paused the run, with
// their step when the view is the run's.
func writePremises(w io.Writer, ps []runs.PremiseFailure, withStep bool) {
	for _, p := range ps {
		if withStep {
			fmt.Fprintf(w, "paused by a failed premise at step %s attempt %d: %s\n", p.StepID, p.Attempt, p.Error)
			continue
		}
		fmt.Fprintf(w, "paused by a failed premise at attempt %d: %s\n", p.Attempt, p.Error)
	}
}
