package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/store"
)

// decideFlags are the flags of approve, reject and settle.
type decideFlags struct {
	loadFlags
	db dbFlag
	// format is -o/--output; value is settle's --value (the step's output);
	// legacyFormat is settle's deprecated --format.
	format, legacyFormat string
	comment, value       string
	noResume             bool
	status               store.ApprovalStatus
}

var decideUse = map[store.ApprovalStatus]struct{ use, short, long string }{
	store.ApprovalApproved: {"approve RUN STEP", "Approve a step that waits for a person; the run goes on",
		`Approve the pending approval of STEP: an approval step succeeds, a tool step
with approval: required calls its tool, a step whose effect was unknown after a
crash, or that failed with on_error: escalate, runs again (its next attempt).
Then the run is resumed here, unless --no-resume.`},
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
	ctx := cmd.Context()
	db, dsn, err := f.db.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore(s, db)
	run, err := resolveRun(ctx, db, dsn, runID)
	if err != nil {
		return err
	}
	runID = run.ID
	if run.Finished() {
		return usageErr("run %s already %s; there is nothing to decide", runID, run.Status)
	}
	a, err := db.DecideApproval(ctx, &store.DecideApprovalParams{RunID: runID, StepID: stepID, Status: f.status,
		Output: out, Comment: f.comment, DecidedBy: decidedBy()})
	if err != nil {
		return f.decideErr(cmd, db, run, stepID, err)
	}
	verb := string(f.status)
	if f.noResume {
		if f.format == "json" {
			return encodeJSON(s, decisionJSON{Approval: a})
		}
		fmt.Fprintf(s.out, "step %s of run %s %s by %s; the run goes on with: rein runs resume %s\n", stepID, runID, verb, a.DecidedBy, runID)
		return nil
	}
	if f.format == "text" {
		fmt.Fprintf(s.out, "step %s of run %s %s by %s\n", stepID, runID, verb, a.DecidedBy)
	}
	res, order, err := advance(cmd, s, db, dsn, runID, &f.loadFlags)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) && ee.err != nil {
			ee.err = fmt.Errorf("the decision is recorded, but run %s did not resume: %w; try again with: rein runs resume %s", runID, ee.err, runID)
		}
		return err
	}
	if f.format == "json" {
		r := toResultJSON(res, false)
		if err := encodeJSON(s, decisionJSON{Approval: a, Result: &r}); err != nil {
			return err
		}
		return &exitError{code: exitCode(ctx, res)}
	}
	return writeRunResult(ctx, s, res, order, dsn, f.format, false)
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
		return nil, usageErr("%s is not JSON: %v", flag, jsonErrAt([]byte(v), err))
	}
	return buf.Bytes(), nil
}

// decideErr explains why a decision could not be recorded.
func (f *decideFlags) decideErr(cmd *cobra.Command, db store.Store, run *store.Run, stepID string, err error) error {
	ctx := cmd.Context()
	all, lerr := db.Approvals(ctx, &store.ListApprovalsParams{RunID: run.ID})
	if lerr != nil {
		return failed("decide step %s of run %s: %w", stepID, run.ID, err)
	}
	var waiting []string
	var last *store.Approval
	for _, a := range all {
		if a.Status == store.ApprovalPending {
			waiting = append(waiting, a.StepID)
		}
		if a.StepID == stepID && (last == nil || !a.CreatedAt.Before(last.CreatedAt)) {
			last = a
		}
	}
	switch {
	case errors.Is(err, store.ErrConflict) && last != nil && last.Status != store.ApprovalPending:
		msg := fmt.Sprintf("step %s of run %s was already %s by %s at %s", stepID, run.ID, last.Status, orCLI(last.DecidedBy), stamp(last.DecidedAt))
		if len(waiting) > 0 {
			msg += fmt.Sprintf("; still waiting: %s", strings.Join(waiting, ", "))
		}
		return usageErr("%s", msg)
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrConflict) && last == nil:
		if len(waiting) == 0 {
			return usageErr("run %s (%s) waits for no decision; there is nothing to %s", run.ID, run.Status, decideVerb(f.status))
		}
		return usageErr("run %s has no pending approval for step %s; waiting for a decision: %s", run.ID, stepID, strings.Join(waiting, ", "))
	}
	return failed("decide step %s of run %s: %w", stepID, run.ID, err)
}

func decideVerb(s store.ApprovalStatus) string {
	switch s {
	case store.ApprovalApproved:
		return "approve"
	case store.ApprovalRejected:
		return "reject"
	}
	return "settle"
}
