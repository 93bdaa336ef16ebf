package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/store"
	reinotel "github.com/reinhq/rein/trace/otel"
)

// Exit codes (docs/ARCHITECTURE.md "Exit codes").
const (
	exitOK          = 0
	exitRunFailed   = 1
	exitUsage       = 2 // bad usage, invalid flow or input: nothing ran
	exitWaiting     = 3
	exitConflict    = 4 // another process holds or advanced the run: nothing more was done here
	exitCancelled   = 5 // the run was cancelled (rein runs cancel), not this process interrupted
	exitDamaged     = 6 // the run store is damaged: nothing was read or written; restore a backup
	exitInterrupted = 130
)

// exitError carries an exit code out of a command; its message, if any, has
// already been printed or is printed by Main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// usageErrFrom is usageErr for the CLI's own wording of cause: the message
// is the CLI's, the class and hint (-o json's envelope) stay cause's.
func usageErrFrom(cause error, format string, args ...any) error {
	return &exitError{code: exitUsage, err: &reworded{msg: fmt.Sprintf(format, args...), cause: cause}}
}

// reworded is an error the CLI says in its own words, with the error it
// stands for as its cause.
type reworded struct {
	msg   string
	cause error
}

func (r *reworded) Error() string { return r.msg }
func (r *reworded) Unwrap() error { return r.cause }

// streams are the command's standard files, so tests can run Main in-process.
type streams struct {
	in       io.Reader
	out, err io.Writer
	// term is stderr itself, for the live progress view, which escapes
	// what it prints itself; out and err escape control characters.
	term io.Writer
	// rawIn and rawOut are stdin and stdout unaltered, for a protocol
	// (rein mcp's JSON-RPC) that must not be rewritten mid-frame.
	rawIn  io.Reader
	rawOut io.Writer
	// red is out's redactor, which hide extends.
	red *redactingWriter
	// tel is the OpenTelemetry export, when the environment asks for one.
	tel *reinotel.Telemetry
	// project is the project the command loaded last (use), whose
	// rein.yaml models name their spans' providers (modelProvider).
	project atomic.Pointer[project.Project]
	// served are the projects rein serve loaded (Server.Projects), whose
	// rein.yaml models name their spans' providers too.
	served atomic.Pointer[func() []*project.Project]
}

// use takes a loaded project into the command's output: stdout and the
// error printer hide its secrets (hide), and the spans of its models
// name their rein.yaml providers.
func (s *streams) use(p *project.Project) {
	s.hide(p.Redactor())
	s.project.Store(p)
}

// hide makes stdout and the error printer hide what red knows as well (a
// loaded project's secrets: rein.yaml secrets: and its models' keys).
// Commands call it before they run anything.
func (s *streams) hide(red *redact.Redactor) {
	if s.red != nil && red != nil {
		s.red.red = s.red.red.Join(red)
	}
}

// Main runs the CLI with args and returns the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if wantsTemporal(args) {
		return runTemporal(ctx, args, stdin, stdout, stderr)
	}
	// Everything on stdout (results, runs show, JSON) is printed through
	// the one redactor, so a secret a tool wrote into its output, or a run
	// recorded before its secret was known, is not shown; control
	// characters are escaped after it.
	red := &redactingWriter{w: escapingWriter{stdout}, red: redact.Process()}
	s := &streams{in: stdin, out: red, red: red, err: escapingWriter{stderr}, term: stderr, rawIn: stdin, rawOut: stdout}
	stderr = s.err
	defer s.setupTelemetry(ctx)()
	root := newRoot(s)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(s.out)
	root.SetErr(s.err)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	defer writeErrorJSON(s, cmd, err)
	// A signal that stopped the command before it had a result of its own
	// (a run it could report) is no usage error: exit 130.
	in := interruptOf(ctx)
	stopped := in != nil && (errors.Is(err, context.Canceled) || errors.Is(err, rein.ErrInterrupted))
	// Every error is printed through the one redactor (the project's,
	// once one is loaded): a message may quote a failing program or server
	// that echoed a key or a DSN.
	var ee *exitError
	if !errors.As(err, &ee) && errors.Is(err, store.ErrDamaged) {
		ee = &exitError{code: exitDamaged, err: err}
		err = ee
	}
	if ee != nil {
		if errors.Is(ee.err, store.ErrDamaged) {
			ee.code = exitDamaged
		}
		if stopped && ee.code == exitUsage {
			ee.code = exitInterrupted
		}
		if ee.err != nil {
			fmt.Fprintln(stderr, "rein:", red.red.String(ee.err.Error()))
			if advice := cliAdvice(ee.err); advice != "" {
				fmt.Fprintln(stderr, "rein:", advice)
			}
		}
		return ee.code
	}
	if stopped {
		fmt.Fprintf(stderr, "rein: interrupted by %s: %s\n", signalName(in.sig), red.red.String(err.Error()))
		return exitInterrupted
	}
	// cobra's own errors: unknown command or flag, wrong argument count.
	fmt.Fprintln(stderr, "rein:", red.red.String(err.Error()))
	fmt.Fprintln(stderr, "Run 'rein help' for usage.")
	return exitUsage
}

// redactingWriter writes what it is given with the secrets red knows
// hidden. Each Write is redacted on its own: the CLI writes whole lines
// or documents at a time.
type redactingWriter struct {
	w   io.Writer
	red *redact.Redactor
	// wrote reports that something was written (a command's own result).
	wrote bool
}

func (r *redactingWriter) Write(p []byte) (int, error) {
	r.wrote = r.wrote || len(p) > 0
	if _, err := io.WriteString(r.w, r.red.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

func newRoot(s *streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "rein",
		Short: "rein runs LLM workflows on a deterministic rein",
		Long: `rein runs workflows written as data. The model decides only what needs
language: what an llm step writes, which route a request takes, what plan a
plan step proposes (validated before anything runs). Step order, retries,
timeouts, budgets, approvals and persistence are code: every run is journaled
(--db, default ./.rein/rein.db) and can be resumed after a crash.

Exit codes: 0 succeeded, 1 run failed, 2 bad usage or invalid flow or input
(nothing ran), 3 run waiting for a person or an agent, 4 another process holds
or advanced the run (nothing more was done here), 5 run cancelled, 6 the run
store is damaged (nothing was read or written: see rein runs check), 130
interrupted.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       readBuildInfo().short(),
	}
	root.SetVersionTemplate("rein {{.Version}}\n")
	root.AddCommand(newRunCmd(s), newAgentCmd(s), newChatCmd(s), newSessionsCmd(s), newValidateCmd(s), newGraphCmd(s), newTraceCmd(s), newRunsCmd(s), newWorkerCmd(s),
		newVersionCmd(s), newSchemaCmd(s), newPlanCmd(s), newRouteCmd(s), newMCPCmd(s), newToolCmd(s), newPolicyCmd(s), newServeCmd(s), newResourcesCmd(s), newTestCmd(s))
	registerCompletions(root)
	return root
}

// errorJSON is what a command run with -o json prints on stdout when it
// fails with a message: the one error envelope (fault.EnvelopeOf), as the
// MCP server and the workflow tool answer it.
type errorJSON struct {
	Error fault.Envelope `json:"error"`
}

// writeErrorJSON prints err's envelope on stdout when cmd was asked for
// JSON (-o json) and printed nothing there, so a program reading stdout
// gets the failure in the same shape every surface uses; stderr still says
// it in words. A failure the command reported in its own JSON (a run that
// failed, an invalid plan's problems) prints nothing more.
func writeErrorJSON(s *streams, cmd *cobra.Command, err error) {
	if cmd == nil || s.red.wrote {
		return
	}
	f := cmd.Flags().Lookup("output")
	if f == nil || f.Value.String() != "json" {
		return
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err == nil {
			return
		}
		err = ee.err
	}
	_ = encodeJSON(s, errorJSON{Error: fault.EnvelopeOf(err)})
}
