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
	db               dbFlag
	format           string
	comment, output  string
	noResume         bool
	status           store.ApprovalStatus
	formatFlagName   string
	stepOutputNeeded bool
}

var decideUse = map[store.ApprovalStatus]struct{ use, short, long string }{
	store.ApprovalApproved: {"approve RUN STEP", "Approve a step that waits for a person; the run goes on",
		`Approve the pending approval of STEP: an approval step succeeds, a tool step
with approval: required calls its tool, a step whose effect was unknown after a
crash, or that failed with on_error: escalate, runs again (its next attempt).
Then the run is resumed here, unless --no-resume.`},
	store.ApprovalRejected: {"reject RUN STEP", "Reject a step that waits for a person; the step fails",
		`Reject the pending approval of STEP: the step fails as a business error
(its on_error applies; an escalated step fails the run with its own error),
and the run is resumed here, unless --no-resume.`},
	store.ApprovalSettled: {"settle RUN STEP --output JSON", "Record what a waiting step produced, by hand; the run goes on with it",
		`Settle STEP with the output a person knows it produced (for a step whose
effect was unknown after a crash, an escalated one, or an approval answered
with data): the output is checked against the step's output schema and the
run is resumed here, unless --no-resume. The result format flag is --format here, since
--output is the step's output.`},
}

func newDecideCmd(s *streams, status store.ApprovalStatus) *cobra.Command {
	f := &decideFlags{status: status, formatFlagName: "--output"}
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
	if status == store.ApprovalSettled {
		f.formatFlagName, f.stepOutputNeeded = "--format", true
		cmd.Flags().StringVar(&f.output, "output", "", "the step's output, as JSON (required)")
		cmd.Flags().StringVar(&f.format, "format", "text", "result format: text or json")
	} else {
		cmd.Flags().StringVarP(&f.format, "output", "o", "text", "result format: text or json")
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
	if err := checkFormat(f.formatFlagName, f.format); err != nil {
		return err
	}
	var out json.RawMessage
	if f.stepOutputNeeded {
		if f.output == "" {
			return usageErr("settle needs --output JSON: the output the step produced")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(f.output)); err != nil {
			return usageErr("--output is not JSON: %v", jsonErrAt([]byte(f.output), err))
		}
		out = buf.Bytes()
	}
	ctx := cmd.Context()
	db, dsn, err := f.db.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore(s, db)
	run, err := db.GetRun(ctx, runID)
	if err != nil {
		return runErr(dsn, runID, err)
	}
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
