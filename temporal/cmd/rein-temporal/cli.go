package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/redact/seal"
	"github.com/reinhq/rein/server/workflowtool"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/temporal"
)

// The exit codes of rein (docs/ARCHITECTURE.md "Exit codes").
const (
	exitOK        = 0
	exitFailed    = 1
	exitUsage     = 2
	exitWaiting   = 3
	exitCancelled = 5
)

const usage = `usage:
  rein worker --temporal HOSTPORT [--task-queue Q] [--namespace NS] [--retry-window 0s] [--store URL] [--log-level info] DIR...
  rein run DIR --temporal HOSTPORT [--task-queue Q] [--namespace NS] [--input FILE] [--run-id ID] [--session ID] [--tenant T] [--detach] [-o json]
  rein agent DIR TASK --temporal HOSTPORT [--task-queue Q] [--namespace NS] [--run-id ID] [--detach] [-o json]
  rein codec-server --temporal [--addr HOST:PORT] [--cors-origin URL] --project DIR [--blobs DIR]
  (every command takes --blobs DIR [--blob-threshold BYTES]: the workers' blob store of large payloads,
   --project DIR: the folder whose rein.yaml encryption: names the keys sealing the runs' payloads,
   and --log-level debug|info|warn|error: the Temporal SDK's log on stderr, info for a worker, warn otherwise)
  rein runs approve|reject|settle RUN STEP --temporal HOSTPORT [--namespace NS] [--by WHO] [--comment TEXT] [--value JSON] [-o json]
  rein runs submit RUN STEP --temporal HOSTPORT [--namespace NS] [--by WHO] --data JSON|@FILE [-o json]
  rein runs retry RUN --temporal HOSTPORT [--namespace NS] [--from STEP] [--by WHO] [-o json]
  rein runs show RUN --temporal HOSTPORT [--namespace NS] [-o json]
  rein runs list --temporal HOSTPORT [--namespace NS] [--flow NAME] [--status S] [--tenant T] [--limit N] [-o json]
  rein runs cancel RUN --temporal HOSTPORT [--namespace NS] [-o json]
  rein runs effects|trace RUN --temporal HOSTPORT [--namespace NS] [-o json]
  rein runs prune --temporal HOSTPORT --blobs DIR [--namespace NS] [--older-than 24h] [--dry-run] [-o json]`

// Main runs one command line and returns its exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	var err error
	code := exitOK
	switch args[0] {
	case "worker":
		err = serveWorker(ctx, args[1:], stderr)
	case "run":
		code, err = run(ctx, args[1:], stdout, stderr)
	case "runs":
		if len(args) < 2 {
			err = usageErr("rein runs needs show, list, cancel, approve, reject, settle, submit, retry, effects, trace or prune")
			break
		}
		if args[1] == "prune" {
			code, err = pruneBlobs(ctx, args[2:], stdout, stderr)
			break
		}
		var handled bool
		if code, handled, err = inspect(ctx, args[1], args[2:], stdout, stderr); !handled {
			code, err = decide(ctx, args[1], args[2:], stdout, stderr)
		}
	case "agent":
		code, err = runAgent(ctx, args[1:], stdout, stderr)
	case "codec-server":
		err = serveCodec(ctx, args[1:], stderr)
	case "blobs":
		err = usageErr("the blob store is pruned by rein runs prune --temporal HOSTPORT --blobs DIR (did you mean it?)")
	default:
		err = usageErr(fmt.Sprintf("rein %s does not take --temporal (worker, run, agent, codec-server and runs show|list|cancel|approve|reject|settle|submit|retry|effects|trace|prune do)", args[0]))
	}
	if err != nil {
		fmt.Fprintln(stderr, "rein:", err)
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(stderr, usage)
			return exitUsage
		}
		return exitFailed
	}
	return code
}

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErr(msg string) error { return &usageError{msg} }

// common are the flags every command takes.
type common struct {
	hostport, namespace, queue string
	// blobs is the blob store of large payloads (--blobs DIR), blobMin
	// the size past which a payload goes there.
	blobs   string
	blobMin int
	// project is --project DIR, whose rein.yaml encryption: names the keys
	// (keys.go); keys are those the client seals and opens with.
	project string
	keys    *seal.Codec
	// logLevel is --log-level, the level of the SDK's log. A worker sets
	// logTo, its stderr, and logs at info by default; the other commands
	// log on os.Stderr at warn.
	logLevel string
	logTo    io.Writer
}

func (c *common) add(fs *flag.FlagSet) {
	fs.StringVar(&c.hostport, "temporal", "", "the Temporal server's HOSTPORT")
	fs.StringVar(&c.namespace, "namespace", "default", "the Temporal namespace")
	fs.StringVar(&c.queue, "task-queue", "rein", "the task queue")
	fs.StringVar(&c.blobs, "blobs", "", "a directory every worker and client shares: payloads past --blob-threshold are stored there, by reference in the history")
	fs.IntVar(&c.blobMin, "blob-threshold", temporal.DefaultBlobThreshold, "with --blobs: the payload size in bytes past which a payload is stored by reference")
	fs.StringVar(&c.project, "project", "", "a flow or agent folder whose rein.yaml encryption: names the keys that seal the runs' payloads (default: the folders the command is given)")
	fs.StringVar(&c.logLevel, "log-level", "", "the Temporal SDK's log on stderr: debug, info, warn or error (default: info for a worker, warn otherwise)")
}

// logger is the SDK's logger --log-level asks for, def when it is empty.
func (c *common) logger(def slog.Level) (tlog.Logger, error) {
	level := def
	if c.logLevel != "" {
		if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
			return nil, usageErr(fmt.Sprintf("--log-level %q: want debug, info, warn or error", c.logLevel))
		}
	}
	out := c.logTo
	if out == nil {
		out = os.Stderr
	}
	return tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level}))), nil
}

// parse parses args with fs, flags and positional arguments in any order.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageErr(err.Error())
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func (c *common) dial() (client.Client, error) {
	if c.hostport == "" {
		return nil, usageErr("--temporal HOSTPORT is required")
	}
	if err := c.loadKeys(); err != nil {
		return nil, err
	}
	def := slog.LevelWarn
	if c.logTo != nil {
		def = slog.LevelInfo // a worker's
	}
	logger, err := c.logger(def)
	if err != nil {
		return nil, err
	}
	opts := client.Options{HostPort: c.hostport, Namespace: c.namespace, Logger: logger}
	opts.DataConverter = c.dataConverter()
	opts.FailureConverter = temporal.NewFailureConverter(c.keys, opts.DataConverter)
	cl, err := client.Dial(opts)
	if err != nil {
		return nil, fmt.Errorf("the Temporal server at %s (namespace %s): %w: is it running, and is --temporal its frontend's HOSTPORT?", c.hostport, c.namespace, err)
	}
	return cl, nil
}

// serveWorker serves the flows of its folders until ctx ends.
func serveWorker(ctx context.Context, args []string, stderr io.Writer) error {
	c := common{logTo: stderr}
	var window time.Duration
	var sf storeFlag
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	c.add(fs)
	sf.add(fs)
	fs.DurationVar(&window, "retry-window", 0, "how long a failed run stays open for rein runs retry (0: it closes as it fails; rein runs retry starts it again)")
	dirs, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		return usageErr("rein worker --temporal needs the flow folders it serves")
	}
	st, dsn, err := sf.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore(st, stderr)
	flows, err := loadFlows(dirs, st)
	if err != nil {
		return err
	}
	if c.keys, err = flows.Keys(); err != nil {
		return err
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := temporal.RegisterSearchAttributes(ctx, cl, c.namespace); err != nil {
		fmt.Fprintf(stderr, "rein worker: %v (runs started now go without search attributes)\n", err)
	}
	w := worker.New(cl, c.queue, temporal.WorkerOptions(worker.Options{}, 0))
	temporal.Register(w, &temporal.Workflow{Flows: flows, RetryWindow: window}, &temporal.Activities{Flows: flows, Client: cl, Sealed: c.keys != nil})
	warnClear(stderr, flows, c.keys)
	fmt.Fprintf(stderr, "rein worker: task queue %s on %s serves %s (run store %s)\n", c.queue, c.hostport, strings.Join(flows.Names(), ", "), dsn)
	return w.Run(stopOn(ctx))
}

// loadFlows loads the flow and agent folders a worker serves (folders),
// st their engines' run store; the workflow tools their agents declare
// are served over st (a task of one is a local run there, which any
// worker on the same store goes on with).
func loadFlows(dirs []string, st store.Store) (*temporal.Flows, error) {
	flows := temporal.NewFlows()
	flows.Store = st
	if err := flows.Load(folders(dirs), &project.LoadOptions{Workflow: workflowtool.AgentTools(st, false)}); err != nil {
		return nil, err
	}
	return flows, nil
}

// folders expands each dir that holds no flow.yaml (nor agent.yaml) but
// folders that do (examples/) into those folders.
func folders(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(d + "/flow.yaml"); err == nil || project.IsAgentDir(d) {
			out = append(out, d)
			continue
		}
		ents, err := os.ReadDir(d)
		if err != nil {
			out = append(out, d) // the load names the problem
			continue
		}
		n := 0
		for _, e := range ents {
			sub := d + "/" + e.Name()
			if _, err := os.Stat(sub + "/flow.yaml"); e.IsDir() && (err == nil || project.IsAgentDir(sub)) {
				out, n = append(out, sub), n+1
			}
		}
		if n == 0 {
			out = append(out, d)
		}
	}
	return out
}

// stopOn is the channel worker.Run stops on: ctx's end.
func stopOn(ctx context.Context) <-chan any {
	ch := make(chan any)
	go func() { <-ctx.Done(); close(ch) }()
	return ch
}

// run starts a run of a folder and follows it until it settles or waits.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var inputPath, runID, output, tenant, session string
	var detach bool
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	c.add(fs)
	fs.StringVar(&inputPath, "input", "", "run input: a JSON file (default: input.json in the flow's folder)")
	fs.StringVar(&runID, "run-id", "", "the run's id (the workflow id); a running run of that id is followed, not started again")
	fs.StringVar(&tenant, "tenant", "", "who the run is for (its ReinTenant search attribute)")
	fs.StringVar(&session, "session", "", "session id, for flows with idempotency: session_workflow_input_hash")
	fs.BoolVar(&detach, "detach", false, "start the run and print its id without following it")
	fs.StringVar(&output, "o", "text", "text or json")
	fs.StringVar(&output, "output", "text", "the same as -o")
	pos, err := parse(fs, args)
	if err != nil {
		return exitUsage, err
	}
	if len(pos) != 1 {
		return exitUsage, usageErr("rein run --temporal takes one flow folder")
	}
	p, err := project.Load(pos[0], declared())
	if err != nil {
		return exitUsage, err
	}
	c.keys = p.Codec()
	var input any = map[string]any{}
	if inputPath == "" {
		inputPath = p.InputPath
	}
	if inputPath != "" {
		data, err := project.ReadInputFile(inputPath)
		if err != nil {
			return exitUsage, err
		}
		if input, err = project.ParseInput(data, inputPath); err != nil {
			return exitUsage, usageErr(err.Error())
		}
	}
	so := temporal.StartOptions{RunID: runID, TaskQueue: c.queue, Tenant: tenant, Namespace: c.namespace, Session: session}
	id, key, err := temporal.StartID(p, input, so)
	if errors.Is(err, engine.ErrSessionRequired) {
		return exitUsage, usageErr(err.Error() + ": pass a session id with --session ID")
	}
	if err != nil {
		return exitUsage, usageErr(err.Error())
	}
	so.RunID = id
	cl, err := c.dial()
	if err != nil {
		return exitUsage, err
	}
	defer cl.Close()
	existing := false
	if key != "" && runID == "" {
		if _, err := cl.DescribeWorkflowExecution(ctx, id, ""); err == nil {
			existing = true
			fmt.Fprintf(stderr, "rein: run %s was started earlier with the same idempotency key (%s); nothing ran now, this is its state\n", id, p.Flow.Idempotency)
		}
	}
	wr, err := temporal.StartRun(ctx, cl, p, input, so)
	if err != nil {
		return exitFailed, err
	}
	fmt.Fprintf(stderr, "rein: run %s (flow %s) on %s, task queue %s\n", wr.GetID(), p.Flow.Name, c.hostport, c.queue)
	if detach {
		fmt.Fprintln(stdout, wr.GetID())
		return exitOK, nil
	}
	var jsonOf func(*temporal.Status, []temporal.Pending) (any, error)
	if output == "json" {
		jsonOf = func(st *temporal.Status, pend []temporal.Pending) (any, error) {
			return resultOf(st, pend, existing), nil
		}
	}
	return followWith(ctx, &c, cl, wr.GetID(), follower{jsonOf: jsonOf}, stdout, stderr)
}

// notOnTemporal says, for a local runs command that has no --temporal
// form, what stands in for it on Temporal.
var notOnTemporal = map[string]string{
	"resume":    "a run on Temporal goes on by itself while a worker serves its task queue (rein worker --temporal HOSTPORT --task-queue Q DIR...); nothing is left to resume",
	"check":     "runs on Temporal are its histories, not rows of a rein store: there is no store to check",
	"why":       "rein runs effects RUN --temporal shows where each argument of a call came from",
	"impact":    "not yet on Temporal (docs/temporal.md, Limits); rein runs effects RUN --temporal lists what the run touched",
	"remediate": "a saga's compensation runs inside the workflow; rein runs effects RUN --temporal shows its remediations",
	"artifacts": "rein runs show RUN --temporal --output json holds each step's output",
}

// decide sends a decision on a waiting step (approve, reject, settle), a
// submission (submit) or a retry of a failed run (retry) as the run's
// update, then follows the run.
func decide(ctx context.Context, action string, args []string, stdout, stderr io.Writer) (int, error) {
	update := temporal.UpdateDecide
	switch action {
	case temporal.ActionApprove, temporal.ActionReject, temporal.ActionSettle:
	case temporal.ActionSubmit:
		update = temporal.UpdateSubmit
	case temporal.ActionRetry:
		update = temporal.UpdateRetry
	default:
		msg := fmt.Sprintf("rein runs %s does not take --temporal (show, list, cancel, approve, reject, settle, submit, retry, effects, trace and prune do)", action)
		if hint := notOnTemporal[action]; hint != "" {
			msg += ": " + hint
		}
		return exitUsage, usageErr(msg)
	}
	var c common
	var by, comment, out, data, from, output string
	fs := flag.NewFlagSet("runs "+action, flag.ContinueOnError)
	c.add(fs)
	fs.StringVar(&by, "by", os.Getenv("USER"), "who decides")
	fs.StringVar(&comment, "comment", "", "why")
	fs.StringVar(&out, "value", "", "settle: the step's output, JSON")
	fs.StringVar(&data, "data", "", "submit: the step's output, JSON or @FILE")
	fs.StringVar(&from, "from", "", "retry: run again from this step (the failed one, or one that settled before it)")
	fs.StringVar(&output, "o", "text", "text or json")
	var outputArg string
	fs.StringVar(&outputArg, "output", "", "text or json, the same as -o; any other value is settle's --value (its earlier name)")
	pos, err := parse(fs, args)
	if err != nil {
		return exitUsage, err
	}
	switch outputArg {
	case "":
	case "text", "json":
		output = outputArg
	default:
		if out == "" {
			out = outputArg
		}
	}
	var d temporal.Decision
	switch action {
	case temporal.ActionRetry:
		if len(pos) != 1 {
			return exitUsage, usageErr("rein runs retry --temporal takes RUN")
		}
		d = temporal.Decision{Step: from, Action: action, By: by, Comment: comment}
	default:
		if len(pos) != 2 {
			return exitUsage, usageErr(fmt.Sprintf("rein runs %s --temporal takes RUN and STEP", action))
		}
		d = temporal.Decision{Step: pos[1], Action: action, By: by, Comment: comment}
	}
	switch action {
	case temporal.ActionSettle:
		if !json.Valid([]byte(out)) {
			return exitUsage, usageErr("rein runs settle needs --value JSON (the step's output)")
		}
		d.Output = json.RawMessage(out)
	case temporal.ActionSubmit:
		raw, err := dataArg(data)
		if err != nil {
			return exitUsage, err
		}
		d.Output = raw
	}
	cl, err := c.dial()
	if err != nil {
		return exitUsage, err
	}
	defer cl.Close()
	// an update waits for a worker to take it: say so when none polls.
	stderr = &lockedWriter{w: stderr}
	answered, stop := watchWorkers(ctx, cl, c.hostport, c.namespace, pos[0], stderr)
	if action == temporal.ActionRetry {
		// an open run takes the update, a closed one starts again.
		err = temporal.RetryRun(ctx, cl, pos[0], d)
	} else {
		err = temporal.Update(ctx, cl, pos[0], update, d)
	}
	answered()
	stop()
	switch {
	case err != nil && action == temporal.ActionRetry:
		return exitUsage, fmt.Errorf("run %s: %w; nothing was done", pos[0], err)
	case err != nil:
		return exitUsage, fmt.Errorf("run %s, step %s: %w", pos[0], pos[1], err)
	}
	return follow(ctx, &c, cl, pos[0], output == "json", stdout, stderr)
}

// maxData bounds a submission's --data (a JSON text or an @FILE).
const maxData = 16 << 20

// dataArg is submit's --data: a JSON text, or @FILE, read up to maxData.
func dataArg(v string) (json.RawMessage, error) {
	if v == "" {
		return nil, usageErr("rein runs submit needs --data JSON (or @FILE): the step's output")
	}
	raw := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		f, err := os.Open(name)
		if err != nil {
			return nil, usageErr(fmt.Sprintf("--data %s: %v", v, err))
		}
		defer f.Close()
		if raw, err = io.ReadAll(io.LimitReader(f, maxData+1)); err != nil {
			return nil, usageErr(fmt.Sprintf("--data %s: %v", v, err))
		}
		if len(raw) > maxData {
			return nil, usageErr(fmt.Sprintf("--data %s: more than %d bytes", v, maxData))
		}
	}
	if !json.Valid(raw) {
		var x any
		err := json.Unmarshal(raw, &x)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, usageErr(fmt.Sprintf("--data: not JSON at byte %d (%v): give the step's output as one JSON value", se.Offset, err))
		}
		return nil, usageErr(fmt.Sprintf("--data: not JSON (%v): give the step's output as one JSON value", err))
	}
	return raw, nil
}

// follow prints each step as it settles and the run's end, and exits as
// rein run does with the run's status; asJSON prints the run as rein run
// --output json does instead (resultOf).
func follow(ctx context.Context, c *common, cl client.Client, runID string, asJSON bool, stdout, stderr io.Writer) (int, error) {
	var f follower
	if asJSON {
		f.jsonOf = func(st *temporal.Status, pend []temporal.Pending) (any, error) { return resultOf(st, pend, false), nil }
	}
	return followWith(ctx, c, cl, runID, f, stdout, stderr)
}

// follower says what followWith prints besides each step's line: all
// three may be nil.
type follower struct {
	// jsonOf, when set, makes the one object printed instead of the text
	// report.
	jsonOf func(*temporal.Status, []temporal.Pending) (any, error)
	// progress is called on each status polled (rein agent: its calls as
	// they settle).
	progress func(*temporal.Status)
	// first prints what comes before the text report (rein agent: the
	// answer), once the run settled or waits.
	first func(*temporal.Status)
}

// followWith is follow, printing what f adds. When the run's workflow
// does not answer, it says whether a worker polls its task queue
// (watchWorkers).
func followWith(ctx context.Context, c *common, cl client.Client, runID string, f follower, stdout, stderr io.Writer) (int, error) {
	seen := map[string]string{}
	stderr = &lockedWriter{w: stderr}
	answered, stop := watchWorkers(ctx, cl, c.hostport, c.namespace, runID, stderr)
	st, err := temporal.Follow(ctx, cl, runID, 200*time.Millisecond, func(s *temporal.Status) {
		answered()
		for _, step := range s.Steps {
			if seen[step.ID] != step.Status && step.Status != "pending" && step.Status != "running" {
				fmt.Fprintf(stderr, "  %-24s %s\n", step.ID, step.Status)
			}
			seen[step.ID] = step.Status
		}
		if f.progress != nil {
			f.progress(s)
		}
	})
	stop()
	if err != nil {
		return exitFailed, err
	}
	var pend []temporal.Pending
	if st.Status == "waiting" {
		if err := temporal.Query(ctx, cl, runID, temporal.QueryPending, &pend); err != nil {
			return exitFailed, fmt.Errorf("run %s waits: what on: %w", runID, err)
		}
	}
	if f.jsonOf != nil {
		v, err := f.jsonOf(st, pend)
		if err != nil {
			return exitFailed, err
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return exitFailed, err
		}
	} else {
		if f.first != nil {
			f.first(st)
		}
		fmt.Fprintf(stdout, "run %s %s\n", st.RunID, st.Status)
		if u := st.Usage; u != nil && u.LLMCalls > 0 {
			fmt.Fprintf(stdout, "  model calls: %d, tokens: %d in / %d out\n", u.LLMCalls, u.TokensIn, u.TokensOut)
		}
		if st.Error != nil {
			fmt.Fprintf(stdout, "  error (%s) at step %s: %s\n", st.Error.Class, st.Error.Step, st.Error.Message)
			if st.Status == "failed" {
				fmt.Fprintf(stdout, "  retry: rein runs retry %s [--from STEP] --temporal …\n", st.RunID)
			}
		}
		for _, p := range pend {
			if p.Kind == "submission" {
				fmt.Fprintf(stdout, "  waits: step %s (%s): rein runs submit %s %s --data JSON --temporal …\n", p.Step, p.Kind, runID, p.Step)
				continue
			}
			fmt.Fprintf(stdout, "  waits: step %s (%s): rein runs approve|reject|settle %s %s --temporal …\n", p.Step, p.Kind, runID, p.Step)
		}
	}
	switch st.Status {
	case "succeeded":
		return exitOK, nil
	case "waiting":
		return exitWaiting, nil
	case "cancelled":
		return exitCancelled, nil
	}
	return exitFailed, nil
}
