package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/reinhq/rein/agent"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/engine"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/jsonl"
	"github.com/reinhq/rein/trace/summary"
)

// storeFlags are the flags of every `rein runs` command: the store and the
// output format.
type storeFlags struct {
	db     dbFlag
	output string
}

func (f *storeFlags) register(cmd *cobra.Command) {
	f.db.register(cmd)
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "text or json")
}

// withStore checks the format, opens the store, calls fn with cmd's
// context, the store and its DSN, and closes the store.
func (f *storeFlags) withStore(cmd *cobra.Command, s *streams, fn func(ctx context.Context, db store.Store, dsn string) error) error {
	if err := checkFormat("--output", f.output); err != nil {
		return err
	}
	db, dsn, err := f.db.open(cmd.Context())
	if err != nil {
		return err
	}
	defer closeStore(s, db)
	return fn(cmd.Context(), db, dsn)
}

func newRunsCmd(s *streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show, trace, resume, cancel, approve, reject, settle and prune durable runs",
		Long: `Work with the durable runs of a run store (--db, default $REIN_DB, else
` + rein.DefaultDB + `). Every subcommand takes --db and -o/--output text|json.

RUN is a run ID, a prefix of exactly one run's ID, or "last" (the newest run
of the store); a prefix that matches several runs is exit 2 and lists them.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				_ = cmd.Help()
				return &exitError{code: exitUsage}
			}
			return usageErr("unknown command %q for rein runs; see rein runs --help", args[0])
		},
	}
	cmd.AddCommand(newRunsListCmd(s), newRunsShowCmd(s), newRunsTraceCmd(s), newRunsResumeCmd(s), newRunsCancelCmd(s),
		newDecideCmd(s, store.ApprovalApproved), newDecideCmd(s, store.ApprovalRejected), newDecideCmd(s, store.ApprovalSettled),
		newRunsPruneCmd(s), newRunsCheckCmd(s))
	return cmd
}

var runStatuses = []trace.RunStatus{trace.RunPending, trace.RunRunning, trace.RunWaiting, trace.RunSucceeded, trace.RunFailed, trace.RunCancelled}

// parseStatus checks a --status flag against statuses ("" passes).
func parseStatus(v string, statuses []trace.RunStatus) (trace.RunStatus, error) {
	if v == "" {
		return "", nil
	}
	names := make([]string, len(statuses))
	for i, st := range statuses {
		if string(st) == v {
			return st, nil
		}
		names[i] = string(st)
	}
	return "", usageErr("--status must be one of %s, not %q", strings.Join(names, ", "), v)
}

func newRunsListCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	var status, flowName string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := parseStatus(status, runStatuses)
			if err != nil {
				return err
			}
			if limit < 0 {
				return usageErr("--limit must be positive, not %d", limit)
			}
			return f.withStore(cmd, s, func(ctx context.Context, db store.Store, dsn string) error {
				runs, err := db.ListRuns(ctx, &store.ListRunsParams{Status: st, Flow: flowName, Limit: limit})
				if err != nil {
					return failed("list runs in %s: %w", redactDSN(dsn), err)
				}
				if f.output == "json" {
					rows := make([]runRow, len(runs))
					for i, r := range runs {
						rows[i] = toRunRow(r)
					}
					return encodeJSON(s, rows)
				}
				if len(runs) == 0 {
					fmt.Fprintf(s.err, "rein: no runs in %s match\n", redactDSN(dsn))
					return nil
				}
				tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tFLOW\tSTATUS\tCREATED\tUPDATED")
				for _, r := range runs {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Flow, r.Status, stamp(r.CreatedAt), stamp(r.UpdatedAt))
				}
				return tw.Flush()
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&status, "status", "", "only runs with this status (pending, running, waiting, succeeded, failed, cancelled)")
	cmd.Flags().StringVar(&flowName, "flow", "", "only runs of this flow (its name)")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many runs")
	_ = cmd.RegisterFlagCompletionFunc("status", fixedValues(statusNames(runStatuses)...))
	return cmd
}

// orEmpty returns v, or an empty slice for nil, so that JSON shows [] and
// not null.
func orEmpty[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// runRow is a run as the runs commands print it in JSON: the store's row,
// with its retention as a duration ("720h0m0s", which --older-than and a
// flow's retention: accept) instead of nanoseconds.
type runRow struct {
	*store.Run
	Retention string `json:"retention,omitempty"`
}

func toRunRow(r *store.Run) runRow {
	row := runRow{Run: r}
	if r.Retention > 0 {
		row.Retention = r.Retention.String()
	}
	return row
}

// runView is what `rein runs show` shows.
type runView struct {
	Run       *store.Run
	Steps     []*store.Step
	Approvals []*store.Approval
	// Use is each step's model calls, tokens and corrections, folded from
	// the journal, by step id.
	Use map[string]stepUse
	// Agents are the transcripts of agent steps, by step id.
	Agents map[string][]agent.Turn
}

// stepUse is what a step's model calls cost, as `rein runs show` gives it.
type stepUse struct {
	LLMCalls    int `json:"llm_calls"`
	TokensIn    int `json:"tokens_in"`
	TokensOut   int `json:"tokens_out"`
	Corrections int `json:"corrections"`
}

// runViewJSON is what `rein runs show --output json` prints.
type runViewJSON struct {
	Run       runRow            `json:"run"`
	Steps     []stepViewJSON    `json:"steps"`
	Approvals []*store.Approval `json:"approvals"`
	// Agents are the transcripts of agent steps, by step id.
	Agents map[string][]agent.Turn `json:"agents,omitempty"`
}

type stepViewJSON struct {
	*store.Step
	stepUse
}

// stepUses folds a run's journal into each step's usage.
func stepUses(events []*trace.Event) map[string]stepUse {
	evs := make([]trace.Event, len(events))
	for i, e := range events {
		evs[i] = *e
	}
	out := map[string]stepUse{}
	for _, r := range summary.Summarize(evs).Runs {
		for _, s := range r.Steps {
			out[s.StepID] = stepUse{LLMCalls: s.ModelCalls, TokensIn: s.TokensIn, TokensOut: s.TokensOut, Corrections: s.Corrections}
		}
	}
	return out
}

func newRunsShowCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a run: its row, every step (status, attempts, output, error) and its approvals",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, s, func(ctx context.Context, db store.Store, dsn string) error {
				var v runView
				var err error
				if v.Run, err = resolveRun(ctx, db, dsn, args[0]); err != nil {
					return err
				}
				id := v.Run.ID
				if v.Steps, err = db.Steps(ctx, id); err != nil {
					return failed("steps of run %s: %w", id, err)
				}
				if v.Approvals, err = db.Approvals(ctx, &store.ListApprovalsParams{RunID: id}); err != nil {
					return failed("approvals of run %s: %w", id, err)
				}
				events, err := db.Events(ctx, id, 0, 0)
				if err != nil {
					return failed("journal of run %s: %w", id, err)
				}
				v.Use = stepUses(events)
				for _, st := range v.Steps {
					if st.Type != "agent" {
						continue
					}
					turns, err := engine.FoldAgentTranscript(events, st.StepID, 0)
					if err != nil {
						return failed("transcript of step %s: %w", st.StepID, err)
					}
					if v.Agents == nil {
						v.Agents = map[string][]agent.Turn{}
					}
					v.Agents[st.StepID] = turns
				}
				if f.output == "json" {
					steps := make([]stepViewJSON, len(v.Steps))
					for i, st := range v.Steps {
						steps[i] = stepViewJSON{Step: st, stepUse: v.Use[st.StepID]}
					}
					return encodeJSON(s, runViewJSON{Run: toRunRow(v.Run), Steps: steps, Approvals: orEmpty(v.Approvals), Agents: v.Agents})
				}
				writeRunView(s.out, &v, dsn)
				return nil
			})
		},
	}
	f.register(cmd)
	return cmd
}

func writeRunView(w io.Writer, v *runView, dsn string) {
	r := v.Run
	fmt.Fprintf(w, "run %s\n", r.ID)
	row := func(k, format string, args ...any) { fmt.Fprintf(w, "  %-10s %s\n", k, fmt.Sprintf(format, args...)) }
	row("flow", "%s (sha256 %.12s)", r.Flow, r.FlowHash)
	if r.FlowPath != "" {
		row("file", "%s", r.FlowPath)
	}
	row("status", "%s", r.Status)
	row("created", "%s", stamp(r.CreatedAt))
	row("updated", "%s", stamp(r.UpdatedAt))
	if !r.SettledAt.IsZero() {
		row("settled", "%s", stamp(r.SettledAt))
	}
	if r.Session != "" {
		row("session", "%s", r.Session)
	}
	if r.IdempotencyKey != "" {
		row("key", "%s", r.IdempotencyKey)
	}
	if r.LeaseOwner != "" && r.LeaseExpires.After(time.Now()) {
		row("leased", "by %s until %s", r.LeaseOwner, stamp(r.LeaseExpires))
	}
	if len(r.Input) > 0 {
		row("input", "%s", preview(r.Input, 120))
	}
	if len(r.Error) > 0 {
		var re engine.RunError
		if json.Unmarshal(r.Error, &re) == nil {
			row("error", "(%s) %s", re.Class, re.Error())
		} else {
			row("error", "%s", preview(r.Error, 200))
		}
	}
	if len(v.Steps) > 0 {
		fmt.Fprintln(w, "steps:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, st := range v.Steps {
			detail := ""
			switch {
			case len(st.Error) > 0:
				var re engine.RunError
				if json.Unmarshal(st.Error, &re) == nil {
					detail = fmt.Sprintf("error (%s): %s", re.Class, clip(re.Message, 120))
				} else {
					detail = "error: " + preview(st.Error, 120)
				}
			case len(st.Output) > 0:
				detail = "output: " + preview(st.Output, 100)
			case len(st.Input) > 0:
				detail = "input: " + preview(st.Input, 100)
			}
			use := ""
			if u := v.Use[st.StepID]; u.LLMCalls > 0 {
				use = fmt.Sprintf("model_calls=%d tokens=%d/%d", u.LLMCalls, u.TokensIn, u.TokensOut)
				if u.Corrections > 0 {
					use += fmt.Sprintf(" corrections=%d", u.Corrections)
				}
			}
			fmt.Fprintf(tw, "  %s\t%s\tattempts=%d\t%s\t%s\n", st.StepID, st.Status, st.Attempt, use, detail)
		}
		_ = tw.Flush()
	}
	for _, st := range v.Steps {
		if turns := v.Agents[st.StepID]; len(turns) > 0 {
			fmt.Fprintf(w, "transcript of %s:\n", st.StepID)
			writeTranscript(w, "  ", turns)
		}
	}
	var pending []*store.Approval
	var decided []*store.Approval
	for _, a := range v.Approvals {
		if a.Status == store.ApprovalPending {
			pending = append(pending, a)
		} else {
			decided = append(decided, a)
		}
	}
	if len(decided) > 0 {
		fmt.Fprintln(w, "decisions:")
		for _, a := range decided {
			fmt.Fprintf(w, "  step %s (%s): %s by %s at %s", a.StepID, a.Kind, a.Status, orCLI(a.DecidedBy), stamp(a.DecidedAt))
			if a.Comment != "" {
				fmt.Fprintf(w, ": %s", a.Comment)
			}
			fmt.Fprintln(w)
		}
	}
	if r.Status == trace.RunWaiting {
		writePending(w, r.ID, dsn, pending)
	}
}

func orCLI(s string) string {
	if s == "" {
		return "someone"
	}
	return s
}

func newRunsTraceCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	var dump bool
	cmd := &cobra.Command{
		Use:   "trace RUN",
		Short: "Summarise a run's journal: slowest steps, tokens, retries, whose failure (--jsonl: dump its events)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, s, func(ctx context.Context, db store.Store, dsn string) error {
				run, err := resolveRun(ctx, db, dsn, args[0])
				if err != nil {
					return err
				}
				id := run.ID
				events, err := db.Events(ctx, id, 0, 0)
				if err != nil {
					return failed("journal of run %s: %w", id, err)
				}
				if dump {
					js := jsonl.New(s.out)
					for _, e := range events {
						js.Emit(ctx, e)
					}
					return js.Close()
				}
				evs := make([]trace.Event, len(events))
				for i, e := range events {
					evs[i] = *e
				}
				sum := summary.Summarize(evs)
				if f.output == "json" {
					return sum.WriteJSON(s.out)
				}
				return sum.WriteText(s.out)
			})
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&dump, "jsonl", false, "print the run's events as JSON lines instead of the summary")
	return cmd
}

func newRunsResumeCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	l := &loadFlags{}
	cmd := &cobra.Command{
		Use:   "resume RUN",
		Short: "Continue a run from its last committed transition",
		Long: `Continue a run from its last committed transition, with the flow it pinned
when it started (never the file on disk). Steps that settled do not run again;
a step that was in flight when its process died runs again if its tool is
idempotent, and otherwise waits for a person (rein runs approve|reject|settle);
if that step was an exec tool whose process group outlived the process that
died, the group is killed first and the question says so. A finished run is
left as it is. Ctrl-C stops this process and leaves the run resumable, as
with rein run (a second Ctrl-C cancels it). Exit codes as rein run.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, s, func(_ context.Context, db store.Store, dsn string) error {
				return resumeRun(cmd, s, db, dsn, args[0], l, f.output)
			})
		},
	}
	f.register(cmd)
	l.registerOverrides(cmd)
	return cmd
}

// resumeRun resumes the run ref names and prints its result like rein run.
func resumeRun(cmd *cobra.Command, s *streams, db store.Store, dsn, ref string, l *loadFlags, format string) error {
	run, err := resolveRun(cmd.Context(), db, dsn, ref)
	if err != nil {
		return err
	}
	res, order, err := advance(cmd, s, db, dsn, run.ID, l)
	if err != nil {
		return err
	}
	return writeRunResult(cmd.Context(), s, res, order, dsn, format, false)
}

// advance resumes run id (a finished run comes back as it is) and returns
// its result and step order.
func advance(cmd *cobra.Command, s *streams, db store.Store, dsn, id string, l *loadFlags) (*engine.Result, []string, error) {
	ctx := cmd.Context()
	run, err := db.GetRun(ctx, id)
	if err != nil {
		return nil, nil, runErr(dsn, id, err)
	}
	if run.Finished() {
		fmt.Fprintf(s.err, "rein: run %s already %s; nothing to resume\n", id, run.Status)
		res, err := engine.New(engine.Config{Store: db}).Status(ctx, id)
		if err != nil {
			return nil, nil, &exitError{code: exitRunFailed, err: err}
		}
		steps, err := db.Steps(ctx, id)
		if err != nil {
			return nil, nil, &exitError{code: exitRunFailed, err: err}
		}
		order := make([]string, len(steps))
		for i, st := range steps {
			order[i] = st.StepID
		}
		return res, order, nil
	}
	p, err := rein.LoadRun(ctx, db, id, &rein.LoadOptions{Script: l.script, Config: l.config, TrustedToolsOnly: l.trustedToolsOnly})
	if err != nil {
		return nil, nil, loadError(s, err)
	}
	progress := newProgress(s.term, p.Flow)
	if steps, err := db.Steps(ctx, id); err == nil {
		progress.seed(steps)
	}
	progress.Start()
	res, err := p.Resume(ctx, id, &engine.Config{Store: db, Sink: progress})
	progress.Stop()
	if err != nil {
		if fault.ClassOf(err) == fault.Conflict {
			return nil, nil, &exitError{code: exitConflict, err: fmt.Errorf("%w; nothing was done here", err)}
		}
		return nil, nil, &exitError{code: exitRunFailed, err: err}
	}
	if res, err = afterInterrupt(ctx, s, db, dsn, res, false); err != nil {
		return nil, nil, err
	}
	return res, stepOrder(p.Flow), nil
}

func newRunsCancelCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel RUN",
		Short: "Cancel a run that is not being advanced elsewhere",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, s, func(ctx context.Context, db store.Store, dsn string) error {
				run, err := resolveRun(ctx, db, dsn, args[0])
				if err != nil {
					return err
				}
				id := run.ID
				if run.Finished() {
					return usageErr("run %s already %s; there is nothing to cancel", id, run.Status)
				}
				if err := engine.New(engine.Config{Store: db}).Cancel(ctx, id, reason); err != nil {
					if errors.Is(err, store.ErrConflict) {
						return &exitError{code: exitConflict, err: fmt.Errorf("%w: run %s is being advanced by %s; stop that process, or wait for its lease to expire (%s), then cancel again", err, id, run.LeaseOwner, stamp(run.LeaseExpires))}
					}
					return &exitError{code: exitRunFailed, err: err}
				}
				if f.output == "json" {
					return encodeJSON(s, map[string]string{"run_id": id, "status": string(trace.RunCancelled)})
				}
				fmt.Fprintf(s.out, "run %s cancelled\n", id)
				return nil
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded as the run's error; default: cancelled by a person)")
	return cmd
}
