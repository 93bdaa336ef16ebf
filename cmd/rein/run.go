package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/jsonl"
)

type runFlags struct {
	loadFlags
	db                                           dbFlag
	input, inputJSON, tracePath, output, session string
	detach, cancelOnInterrupt                    bool
}

func newRunCmd(s *streams) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run PATH",
		Short: "Validate and run a flow (a flow file, or a folder holding flow.yaml)",
		Long: `Validate and run a flow. PATH is a flow file or a folder holding flow.yaml;
from that folder input.json, script.yaml and rein.yaml are picked up unless
--input, --input-json, --script or --config say otherwise.

The run is durable: its journal goes to the run store (--db, default $REIN_DB,
else ` + defaultDB + `; :memory: keeps nothing after exit), so it can be
listed, shown, traced, resumed and approved with rein runs. --detach records
the run for a worker (rein worker) instead of running it, and prints its id.

Progress goes to stderr (a live list on a terminal, one line per event
otherwise); the result goes to stdout (--output json: exactly one JSON object).
A waiting run prints what it waits on and the commands to go on.
Exit codes: 0 succeeded (or --detach recorded the run), 1 failed, 2 invalid
flow or input (nothing ran), 3 waiting for a person, 4 another process holds
or advanced the run (this one stopped; the run goes on there or with rein runs
resume), 5 cancelled (by a second Ctrl-C or --cancel-on-interrupt, or an
earlier run of the same idempotency key), 130 interrupted.

Ctrl-C (SIGINT) or SIGTERM stops this process, not the run: the steps in
flight are stopped (an exec tool's process group is killed), nothing more is
recorded, and the run stays resumable with rein runs resume RUN, which stderr
prints. A step that was in flight runs again on resume if its tool is
idempotent, and otherwise waits for a person as unknown (its effect may have
begun). A second Ctrl-C, or --cancel-on-interrupt, cancels the run instead.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, s, args[0]) },
	}
	f.register(cmd)
	f.registerCassettes(cmd)
	f.db.register(cmd)
	cmd.Flags().StringVar(&f.input, "input", "", "run input: a JSON file, or - for stdin (default: input.json in the flow's folder)")
	cmd.Flags().StringVar(&f.inputJSON, "input-json", "", "run input as inline JSON")
	cmd.Flags().StringVar(&f.tracePath, "trace", "", "write the run's events to this JSONL file")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "result format: text or json")
	cmd.Flags().StringVar(&f.session, "session", "", "session id, for flows with idempotency: session_workflow_input_hash")
	cmd.Flags().BoolVar(&f.detach, "detach", false, "record the run as pending for a worker (rein worker) and print its id; run nothing here")
	cmd.Flags().BoolVar(&f.cancelOnInterrupt, "cancel-on-interrupt", false, "on SIGINT or SIGTERM cancel the run (exit 5) instead of leaving it resumable")
	return cmd
}

func (f *runFlags) run(cmd *cobra.Command, s *streams, path string) error {
	if err := checkFormat("--output", f.output); err != nil {
		return err
	}
	// A durable run records where its flow came from, and a resume (maybe a
	// worker in another folder) resolves the flow's schema files and tool
	// folders against it: make it absolute.
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	ctx := cmd.Context()
	// The store opens once the run starts, or before, when the flow's
	// agents have workflow tools (their tasks are runs of the store).
	lazy := &lazyStore{db: &f.db}
	defer lazy.close(s)
	f.workflow = lazy.workflows(ctx, f.trustedToolsOnly)
	p, err := f.load(s, path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := p.Close(); cerr != nil {
			fmt.Fprintf(s.err, "rein: %v\n", cerr)
		}
	}()
	input, err := readInput(s, f.inputJSON, f.input, p.InputPath)
	if err != nil {
		return err
	}
	checker, err := rein.Open(ctx, rein.Config{})
	if err != nil {
		return err
	}
	if err := checker.CheckInput(p, input); err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("%w; nothing ran", err)}
	}
	if !f.detach { // a worker, with its own environment, runs a detached run
		if err := checkStart(s, p); err != nil {
			return err
		}
	}
	st, err := lazy.open(ctx)
	if err != nil {
		return err
	}
	dsn := lazy.dsn
	opts := &rein.RunOptions{Session: f.session}
	if f.detach {
		return f.enqueue(cmd, s, p, st, dsn, input, opts)
	}
	res, err := startWatched(ctx, s, p, st, dsn, input, opts, f.tracePath, f.cancelOnInterrupt, nil)
	if err != nil {
		return err
	}
	existing := res.Existing
	if existing {
		fmt.Fprintf(s.err, "rein: run %s was started earlier with the same idempotency key (%s); nothing ran now, this is its state\n", res.RunID, p.Flow.Idempotency)
	}
	return writeRunResult(ctx, s, res, stepOrder(p.Flow), dsn, f.output, existing)
}

// enqueue records the run for a worker (--detach).
func (f *runFlags) enqueue(cmd *cobra.Command, s *streams, p *project.Project, st store.Store, dsn string, input any, opts *rein.RunOptions) error {
	c, err := rein.Open(cmd.Context(), rein.Config{Store: st, Sink: s.withTelemetry(nil)})
	if err != nil {
		return err
	}
	id, err := c.Enqueue(cmd.Context(), p, input, opts)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("%w; nothing was recorded", err)}
	}
	if f.output == "json" {
		return encodeJSON(s, map[string]string{"run_id": id, "flow": p.Flow.Name, "status": string(trace.RunPending)})
	}
	fmt.Fprintln(s.out, id)
	fmt.Fprintf(s.err, "rein: run %s of flow %s is pending in %s; a worker runs it: rein worker --db %s\n", id, p.Flow.Name, redactDSN(dsn), shellQuote(redactDSN(dsn)))
	return nil
}

// stepOrder lists a flow's step ids in file order.
func stepOrder(fl *flow.Flow) []string {
	ids := make([]string, len(fl.Steps))
	for i, s := range fl.Steps {
		ids[i] = s.ID
	}
	return ids
}

// startWatched starts a run of p with live progress on the terminal and,
// with tracePath, its events in a JSONL file; a start refused before
// anything ran is bad usage (exit 2). An interrupted run is finished as
// afterInterrupt says (cancel: cancel it rather than leave it resumable).
func startWatched(ctx context.Context, s *streams, p *project.Project, st store.Store, dsn string, input any, opts *rein.RunOptions, tracePath string, cancel bool, extra trace.Sink) (*rein.Result, error) {
	progress := newProgress(s.term, p.Flow)
	sinks := []trace.Sink{progress, extra}
	var js *jsonl.Sink
	if tracePath != "" {
		var err error
		if js, err = jsonl.Create(tracePath); err != nil {
			return nil, usageErr("--trace: %v", err)
		}
		sinks = append(sinks, js)
	}
	c, err := rein.Open(ctx, rein.Config{Store: st, Sink: s.withTelemetry(trace.Multi(sinks...))})
	if err != nil {
		return nil, err
	}
	progress.Start()
	res, err := c.Start(ctx, p, input, opts)
	progress.Stop()
	if js != nil {
		if cerr := js.Close(); cerr != nil {
			fmt.Fprintf(s.err, "rein: writing trace %s: %v\n", tracePath, cerr)
		}
	}
	if err != nil {
		var ie *rein.InputError
		if errors.As(err, &ie) {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("%w; nothing ran", err)}
		}
		return nil, &exitError{code: exitUsage, err: err}
	}
	return afterInterrupt(ctx, s, st, dsn, res, cancel)
}

// writeRunResult prints a run's result (text or JSON) and returns the exit
// code its status maps to.
func writeRunResult(ctx context.Context, s *streams, res *rein.Result, order []string, dsn, format string, existing bool) error {
	if format == "json" {
		if err := writeResultJSON(s, res, existing); err != nil {
			return err
		}
	} else {
		writeResultText(s, res, order)
		writePending(s.out, res.RunID, dsn, res.Pending, nil)
	}
	code := exitCode(ctx, res)
	if code == exitDamaged {
		return &exitError{code: code, err: fmt.Errorf("run %s stopped: %s (rein runs check --db %s lists what is wrong)", res.RunID, res.Error.Message, shellQuote(redactDSN(dsn)))}
	}
	return &exitError{code: code}
}

// exitCode maps a run's result to the exit code: a run this process's
// interruption stopped (resumable) is 130, a cancelled run 5 (130 if ctx,
// this command's, ended and the run could not stay resumable); a run that
// stopped because another process holds or advanced it (class conflict) is
// 4, one that stopped on a damaged store (class damaged) 6, any other
// failure 1.
func exitCode(ctx context.Context, res *rein.Result) int {
	if res.Interrupted {
		return exitInterrupted
	}
	switch res.Status {
	case trace.RunSucceeded:
		return exitOK
	case trace.RunWaiting:
		return exitWaiting
	case trace.RunCancelled:
		if ctx.Err() != nil && interruptOf(ctx) == nil {
			return exitInterrupted
		}
		return exitCancelled
	}
	if res.Error != nil {
		switch res.Error.Class {
		case fault.Conflict:
			return exitConflict
		case fault.Damaged:
			return exitDamaged
		}
	}
	return exitRunFailed
}

// resultJSON is the one object `rein run --output json` prints.
type resultJSON struct {
	RunID   string                    `json:"run_id"`
	Flow    string                    `json:"flow"`
	Status  trace.RunStatus           `json:"status"`
	Outputs map[string]any            `json:"outputs"`
	Steps   map[string]stepResultJSON `json:"steps"`
	Usage   rein.Usage                `json:"usage"`
	Error   *rein.RunError            `json:"error"`
	// Pending are the approvals a waiting run waits on.
	Pending []*store.Approval `json:"pending"`
	// Existing: an idempotency key returned a run started earlier.
	Existing bool `json:"existing,omitempty"`
	// Interrupted: this process stopped; the run stays resumable.
	Interrupted bool `json:"interrupted,omitempty"`
}

type stepResultJSON struct {
	Status      trace.StepStatus `json:"status"`
	Attempts    int              `json:"attempts"`
	Corrections int              `json:"corrections"`
	DurationMS  float64          `json:"duration_ms"`
	LLMCalls    int              `json:"llm_calls"`
	TokensIn    int              `json:"tokens_in"`
	TokensOut   int              `json:"tokens_out"`
	Error       *rein.RunError   `json:"error,omitempty"`
}

func toResultJSON(res *rein.Result, existing bool) resultJSON {
	out := resultJSON{RunID: res.RunID, Flow: res.Flow, Status: res.Status, Outputs: res.Outputs, Usage: res.Usage,
		Error: res.Error, Steps: map[string]stepResultJSON{}, Pending: res.Pending, Existing: existing, Interrupted: res.Interrupted}
	if out.Pending == nil {
		out.Pending = []*store.Approval{}
	}
	for id, st := range res.Steps {
		use := st.ModelUse()
		out.Steps[id] = stepResultJSON{Status: st.Status, Attempts: st.Attempts, Corrections: use.Corrections, DurationMS: trace.Millis(st.Duration),
			LLMCalls: use.LLMCalls, TokensIn: use.TokensIn, TokensOut: use.TokensOut, Error: st.Error}
	}
	return out
}

func writeResultJSON(s *streams, res *rein.Result, existing bool) error {
	return encodeJSON(s, toResultJSON(res, existing))
}

func writeResultText(s *streams, res *rein.Result, order []string) {
	w := s.out
	fmt.Fprintf(w, "run %s: %s %s in %s\n", res.RunID, res.Flow, res.Status, roundDuration(res.Duration))
	for _, id := range order {
		st, ok := res.Steps[id]
		if !ok {
			st.Status = trace.StepPending
		}
		fmt.Fprintf(w, "  %-24s %-10s attempts=%d", id, st.Status, st.Attempts)
		use := st.ModelUse()
		if use.Corrections > 0 {
			fmt.Fprintf(w, " corrections=%d", use.Corrections)
		}
		if use.LLMCalls > 0 {
			fmt.Fprintf(w, " model_calls=%d tokens=%d/%d", use.LLMCalls, use.TokensIn, use.TokensOut)
		}
		fmt.Fprintf(w, " %s\n", roundDuration(st.Duration))
	}
	if res.Usage.LLMCalls > 0 {
		fmt.Fprintf(w, "model calls: %d, tokens: %d in / %d out\n", res.Usage.LLMCalls, res.Usage.TokensIn, res.Usage.TokensOut)
	}
	if res.Error != nil {
		fmt.Fprintf(w, "error (%s", res.Error.Class)
		if res.Error.Budget != "" {
			fmt.Fprintf(w, ", budget %s", res.Error.Budget)
		}
		fmt.Fprintf(w, "): %s\n", res.Error.Error())
	}
	if len(res.Outputs) > 0 {
		b, _ := json.MarshalIndent(res.Outputs, "", "  ")
		fmt.Fprintf(w, "outputs:\n%s\n", b)
	}
}

// roundDuration keeps three significant places below a second (137µs,
// 12.3ms) and milliseconds above, so a quick step does not read as 0s.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < time.Second:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}
