package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/value"
)

// decideFlags are the flags of approve, reject and settle.
type decideFlags struct {
	loadFlags
	db dbFlag
	// format is -o/--output; value is settle's --value (the step's output);
	// legacyFormat is settle's deprecated --format.
	format, legacyFormat string
	comment, value       string
	// by is --by: who decides (default: decidedBy).
	by       string
	noResume bool
	status   store.ApprovalStatus
}

var decideUse = map[store.ApprovalStatus]struct{ use, short, long string }{
	store.ApprovalApproved: {"approve RUN STEP", "Approve a step that waits for a person; the run goes on",
		`Approve the pending approval of STEP: an approval step succeeds, a tool step
with approval: required calls its tool, a step whose effect was unknown after a
crash, or that failed with on_error: escalate, runs again (its next attempt).
Then the run is resumed here, unless --no-resume. When a model the run may
still call has no API key in this environment, the decision is recorded
without the resume (exit 3), and rein says which variable to set.`},
	store.ApprovalRejected: {"reject RUN STEP", "Reject a step that waits for a person; the step fails",
		`Reject the pending approval of STEP: the step fails as a business error
(the run fails; an escalated step fails it with its own error), and the run
is resumed here, unless --no-resume.`},
	store.ApprovalSettled: {"settle RUN STEP --value JSON", "Record what a waiting step produced, by hand; the run goes on with it",
		`Settle STEP with the output a person knows it produced (--value JSON; for a
step whose effect was unknown after a crash, an escalated one, or an approval
answered with data): the value is checked against the step's output schema and
the run is resumed here, unless --no-resume. -o/--output is the result format,
as on every command; the older spelling --output JSON (with --format for the
format) still works for this release, with a warning.`},
}

func newDecideCmd(s *streams, status store.ApprovalStatus) *cobra.Command {
	f := &decideFlags{status: status}
	u := decideUse[status]
	cmd := &cobra.Command{
		Use:   u.use,
		Short: u.short,
		Long:  u.long + "\n\nExit codes after a resume as rein run; 2 when there is nothing to decide.",
		Args:  cobra.ExactArgs(2),
		RunE:  func(cmd *cobra.Command, args []string) error { return f.run(cmd, s, args[0], args[1]) },
	}
	f.db.register(cmd)
	f.loadFlags.registerOverrides(cmd)
	cmd.Flags().StringVar(&f.comment, "comment", "", "why (recorded with the decision)")
	cmd.Flags().StringVar(&f.by, "by", "", "who decides, recorded with the decision (default: the OS user, else $USER, else cli)")
	cmd.Flags().BoolVar(&f.noResume, "no-resume", false, "record the decision only; resume later with rein runs resume")
	addOutputFlag(cmd, &f.format)
	if status == store.ApprovalSettled {
		cmd.Flags().StringVar(&f.value, "value", "", "the step's output, as JSON (required)")
		cmd.Flags().StringVar(&f.legacyFormat, "format", "", "result format: text or json")
		_ = cmd.Flags().MarkHidden("format") // deprecated: settleValue warns
	}
	return cmd
}

// decisionJSON is what approve, reject and settle print with JSON output.
type decisionJSON struct {
	Approval *store.Approval `json:"approval"`
	// Result is the run after the resume; null with --no-resume.
	Result *resultJSON `json:"result"`
}

func (f *decideFlags) run(cmd *cobra.Command, s *streams, runID, stepID string) error {
	var out json.RawMessage
	if f.status == store.ApprovalSettled {
		var err error
		if out, err = f.settleValue(s); err != nil {
			return err
		}
	}
	if err := checkFormat("--output", f.format); err != nil {
		return err
	}
	if err := f.checkModelFlags(); err != nil {
		return err
	}
	return withRuns(cmd, s, &f.db, f.runsOptions(), func(ctx context.Context, c *rein.Client, dsn string) error {
		d := rein.Decision{Status: f.status, Comment: f.comment, Output: out, By: decidedBy(f.by)}
		opts := &rein.DecideOptions{Resume: !f.noResume}
		if !f.noResume {
			opts.ResumeOptions = *watchProgress(s)
		}
		o, err := c.Decide(ctx, runID, stepID, d, opts)
		if o == nil {
			return runsError(s, dsn, runID, err)
		}
		a := o.Approval
		id, verb := a.RunID, string(f.status)
		if f.format == "text" && !f.noResume {
			fmt.Fprintf(s.out, "step %s of run %s %s by %s\n", stepID, id, verb, a.DecidedBy)
		}
		if err != nil {
			return f.resumeFailed(s, o, err)
		}
		if o.Result != nil {
			if o.Result, err = afterInterrupt(ctx, s, c.Store(), dsn, o.Result, false); err != nil {
				return err
			}
		}
		if f.noResume {
			if f.format == "json" {
				return encodeJSON(s, decisionJSON{Approval: a})
			}
			fmt.Fprintf(s.out, "step %s of run %s %s by %s; %s\n", stepID, id, verb, a.DecidedBy, goesOn(id, o.NeedsTools))
			return nil
		}
		if f.format == "json" {
			r := toResultJSON(o.Result, false)
			if err := encodeJSON(s, decisionJSON{Approval: a, Result: &r}); err != nil {
				return err
			}
			return &exitError{code: exitCode(ctx, o.Result)}
		}
		return writeRunResult(ctx, s, o.Result, o.StepOrder, dsn, f.format, false)
	})
}

// goesOn says how a run goes on after a decision recorded without a resume.
func goesOn(runID string, needsTools []string) string {
	if len(needsTools) > 0 {
		return needsToolsAdvice(runID, needsTools)
	}
	return "the run goes on with: rein runs resume " + runID
}

// resumeFailed reports a decision that was recorded when the resume after
// it failed: a run that needs Go tools waits for the program that has them
// (exit 3), a run whose model's API key is not set waits for a resume with
// it (exit 3); otherwise the resume's error, and how to try again.
func (f *decideFlags) resumeFailed(s *streams, o *rein.Outcome, err error) error {
	a := o.Approval
	h := fault.HintOf(err)
	if h.Code == fault.HintNeedsTools {
		if f.format == "json" {
			if jerr := encodeJSON(s, decisionJSON{Approval: a}); jerr != nil {
				return jerr
			}
		}
		return &exitError{code: exitWaiting, err: fmt.Errorf("the decision is recorded; %s", needsToolsAdvice(a.RunID, h.Tools))}
	}
	if h.Code == fault.HintNeedsKey {
		// the decision stands: the run waits for a resume with the key.
		if f.format == "json" {
			if jerr := encodeJSON(s, decisionJSON{Approval: a}); jerr != nil {
				return jerr
			}
		}
		return &exitError{code: exitWaiting, err: fmt.Errorf("%w; once rein.yaml encryption: names key %s, continue with: rein runs resume %s", err, h.KeyID, a.RunID)}
	}
	if h.Code == fault.HintNeedsAPIKey {
		// the decision stands, as with --no-resume: the run waits for a
		// resume with the key (or a worker that has it).
		if f.format == "json" {
			if jerr := encodeJSON(s, decisionJSON{Approval: a}); jerr != nil {
				return jerr
			}
		}
		return &exitError{code: exitWaiting, err: fmt.Errorf("%w; once %s is set, continue with: rein runs resume %s", err, strings.Join(h.Env, " and "), a.RunID)}
	}
	code := exitRunFailed
	switch h.Code {
	case fault.HintHeldByAnotherProcess:
		code = exitConflict
	case fault.HintFlowDoesNotLoad:
		code = exitUsage
	}
	return &exitError{code: code, err: fmt.Errorf("%w; try again with: rein runs resume %s", err, a.RunID)}
}

// settleValue returns settle's --value, compacted. Before --value, settle
// took the step's output as --output JSON and the result format as
// --format: a --output that is not a format, given without --value, is
// read that way, with a warning.
func (f *decideFlags) settleValue(s *streams) (json.RawMessage, error) {
	flag, v := "--value", f.value
	if v == "" && f.format != "text" && f.format != "json" {
		flag, v = "--output", f.format
		f.format = "text"
		if f.legacyFormat != "" {
			f.format = f.legacyFormat
		}
		fmt.Fprintln(s.err, "rein: settle --output JSON is deprecated: pass the step's output as --value JSON; -o/--output is the result format (text or json)")
	} else if f.legacyFormat != "" {
		fmt.Fprintln(s.err, "rein: settle --format is deprecated: use -o/--output text|json")
		if f.format != "text" && f.format != f.legacyFormat {
			return nil, usageErr("--format %s and --output %s disagree: give -o/--output only", f.legacyFormat, f.format)
		}
		f.format = f.legacyFormat
	}
	if v == "" {
		return nil, usageErr("settle needs --value JSON: the output the step produced")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(v)); err != nil {
		return nil, usageErr("%s is not JSON: %v", flag, value.Locate([]byte(v), err))
	}
	return buf.Bytes(), nil
}
