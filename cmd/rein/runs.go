package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/runs"
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
// context, the run operations of the store (with opts) and its DSN, and
// closes the store.
func (f *storeFlags) withStore(cmd *cobra.Command, s *streams, opts *rein.Config, fn func(ctx context.Context, c *rein.Client, dsn string) error) error {
	if err := checkFormat("--output", f.output); err != nil {
		return err
	}
	return withRuns(cmd, s, &f.db, opts, fn)
}

// withRuns opens the store db names, calls fn with cmd's context, the run
// operations of the store (with opts) and its DSN, and closes the store.
func withRuns(cmd *cobra.Command, s *streams, db *dbFlag, opts *rein.Config, fn func(ctx context.Context, c *rein.Client, dsn string) error) error {
	st, dsn, err := db.open(cmd.Context())
	if err != nil {
		return err
	}
	defer closeStore(s, st)
	cfg := rein.Config{}
	if opts != nil {
		cfg = *opts
	}
	if cfg.Load == nil {
		cfg.Load = &project.LoadOptions{}
	}
	cfg.Store = st
	serveWorkflows(cfg.Load, st) // a resumed agent's workflow tools
	cfg.Sink = s.withTelemetry(cfg.Sink)
	c, err := rein.Open(cmd.Context(), cfg)
	if err != nil {
		return usageErr("--db %s: %v", redactDSN(dsn), err)
	}
	if c.Runs() == nil {
		return usageErr("--db %s: the store keeps no runs", redactDSN(dsn))
	}
	return fn(cmd.Context(), c, dsn)
}

func newRunsCmd(s *streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show, trace, resume, retry, cancel, approve, reject, settle and prune durable runs",
		Long: `Work with the durable runs of a run store (--db, default $REIN_DB, else
` + defaultDB + `). Every subcommand takes --db and -o/--output text|json.

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
	cmd.AddCommand(newRunsListCmd(s), newRunsShowCmd(s), newRunsTraceCmd(s), newRunsResumeCmd(s), newRunsRetryCmd(s), newRunsCancelCmd(s),
		newDecideCmd(s, store.ApprovalApproved), newDecideCmd(s, store.ApprovalRejected), newDecideCmd(s, store.ApprovalSettled),
		newRunsPruneCmd(s), newRunsCheckCmd(s), newRunsArtifactsCmd(s), newRunsWhyCmd(s), newRunsEffectsCmd(s),
		newRunsImpactCmd(s), newRunsRemediateCmd(s))
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
	var status, flowName, sessionID string
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
			return f.withStore(cmd, s, nil, func(ctx context.Context, c *rein.Client, dsn string) error {
				runs, err := c.Runs().List(ctx, &store.ListRunsParams{Status: st, Flow: flowName, Session: sessionID, Limit: limit})
				if err != nil {
					return failed("%s: %w", redactDSN(dsn), err)
				}
				if f.output == "json" {
					return encodeJSON(s, orEmpty(runs))
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
	cmd.Flags().StringVar(&sessionID, "session", "", "only runs of this session (rein chat --session ID; rein sessions list)")
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

func newRunsShowCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a run: its row, every step (status, attempts, output, error), the calls of its for_each and plan steps, and its approvals",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, s, nil, func(ctx context.Context, c *rein.Client, dsn string) error {
				v, err := c.Runs().Show(ctx, args[0])
				if err != nil {
					return runsError(s, dsn, args[0], err)
				}
				if f.output == "json" {
					return encodeJSON(s, v)
				}
				writeRunView(s.out, v, dsn)
				return nil
			})
		},
	}
	f.register(cmd)
	return cmd
}

func writeRunView(w io.Writer, v *runs.View, dsn string) {
	r := v.Run.Run
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
		var re rein.RunError
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
				var re rein.RunError
				if json.Unmarshal(st.Error, &re) == nil {
					detail = fmt.Sprintf("error (%s): %s", re.Class, runs.Clip(re.Message, 120))
				} else {
					detail = "error: " + preview(st.Error, 120)
				}
			case len(st.Output) > 0:
				detail = "output: " + preview(st.Output, 100)
			case len(st.Input) > 0:
				detail = "input: " + preview(st.Input, 100)
			}
			use := ""
			if u := st.StepUsage; u.LLMCalls > 0 {
				use = fmt.Sprintf("model_calls=%d tokens=%d/%d", u.LLMCalls, u.TokensIn, u.TokensOut)
				if u.Corrections > 0 {
					use += fmt.Sprintf(" corrections=%d", u.Corrections)
				}
			}
			fmt.Fprintf(tw, "  %s\t%s\tattempts=%d\t%s\t%s\n", st.StepID, st.Status, st.Attempt, use, detail)
		}
		_ = tw.Flush()
	}
	writeCalls(w, v.Calls)
	writeInvalidated(w, runs.InvalidatedCalls(v.Calls))
	for _, st := range v.Steps {
		if turns := v.Agents[st.StepID]; len(turns) > 0 {
			fmt.Fprintf(w, "transcript of %s:\n", st.StepID)
			runs.WriteTranscript(w, "  ", turns, nil)
		}
	}
	writeGuardrails(w, v.Guardrails)
	writeFailures(w, v.Failures)
	writeGate(w, v.Gate)
	writeRisk(w, v.Risk)
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
		writePending(w, r.ID, dsn, pending, v.NeedsTools)
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
			return f.withStore(cmd, s, nil, func(ctx context.Context, c *rein.Client, dsn string) error {
				run, err := resolveRun(ctx, s, c, dsn, args[0])
				if err != nil {
					return err
				}
				id := run.ID
				events, err := c.Store().Events(ctx, id, 0, 0)
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
			if err := l.checkModelFlags(); err != nil {
				return err
			}
			return f.withStore(cmd, s, l.runsOptions(), func(ctx context.Context, c *rein.Client, dsn string) error {
				out, err := c.Resume(ctx, args[0], watchProgress(s))
				if err != nil {
					if fault.HintOf(err).Code == fault.HintHeldByAnotherProcess {
						return &exitError{code: exitConflict, err: fmt.Errorf("%w; nothing was done here", err)}
					}
					return runsError(s, dsn, args[0], err)
				}
				if out.Finished {
					fmt.Fprintf(s.err, "rein: run %s already %s; nothing to resume\n", out.Result.RunID, out.Result.Status)
				}
				res, err := afterInterrupt(ctx, s, c.Store(), dsn, out.Result, false)
				if err != nil {
					return err
				}
				return writeRunResult(ctx, s, res, out.StepOrder, dsn, f.output, false)
			})
		},
	}
	f.register(cmd)
	l.registerOverrides(cmd)
	return cmd
}

// runsOptions are the run operations' options of a command that resumes
// runs: --script, --model, --record, --replay, --config and
// --trusted-tools-only.
func (l *loadFlags) runsOptions() *rein.Config {
	return &rein.Config{Load: &project.LoadOptions{Script: l.script, Config: l.config, Model: l.model, Record: l.record, Replay: l.replay,
		TrustedToolsOnly: l.trustedToolsOnly}}
}

// watchProgress shows a resumed run's progress on the terminal (stderr).
func watchProgress(s *streams) *rein.ResumeOptions {
	return &rein.ResumeOptions{Watch: func(p *project.Project, steps []*store.Step) (trace.Sink, func()) {
		s.use(p)
		progress := newProgress(s.term, p.Flow)
		progress.seed(steps)
		progress.Start()
		return progress, progress.Stop
	}}
}

func newRunsCancelCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel RUN",
		Short: "Cancel a run that is not being advanced elsewhere",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, s, nil, func(ctx context.Context, c *rein.Client, dsn string) error {
				run, err := c.Cancel(ctx, args[0], reason)
				if err != nil {
					return runsError(s, dsn, args[0], err)
				}
				if f.output == "json" {
					return encodeJSON(s, map[string]string{"run_id": run.ID, "status": string(run.Status)})
				}
				fmt.Fprintf(s.out, "run %s cancelled\n", run.ID)
				return nil
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded as the run's error; default: cancelled by a person)")
	return cmd
}
