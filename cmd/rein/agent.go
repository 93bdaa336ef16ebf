package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

type agentFlags struct {
	loadFlags
	db                dbFlag
	tracePath, output string
	// jsonLines prints each --output json object on one line (rein chat).
	jsonLines bool
	// chat prints each answer without a run report (rein chat).
	chat bool
}

func newAgentCmd(s *streams) *cobra.Command {
	f := &agentFlags{}
	cmd := &cobra.Command{
		Use:   "agent DIR TASK",
		Short: "Run an agent (a folder holding agent.yaml) on one task",
		Long: `Run the agent of DIR (agent.yaml, with the rein.yaml and script.yaml beside it
unless --config, --script or --model say otherwise) on TASK: each turn the
model calls tools or answers; rein validates each call, passes it through the
policy gate, waits for a person where a tool says approval: required, runs it
and commits the turn before the next one.

The conversation is printed as it happens: the model's text as it is written
(providers stream), each tool call as one line once it settles, then the
run's report.

The run is durable like rein run's: rein runs list, show (the transcript),
resume and approve work on it. A call that waits for a person is the approval
of step agent/turn<T>/call<C>, printed with the commands to go on.
--output json prints one object: run_id, status (answered, waiting, failed),
answer, calls (turn, tool, args, status, observation preview), usage (turns,
tool_calls, llm_calls, tokens_in, tokens_out), error and pending.
Exit codes: 0 answered, 1 failed, 2 invalid agent or task (nothing ran),
3 waiting for a person, 4, 5 and 130 as rein run.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, s, args[0], args[1]) },
	}
	f.register(cmd)
	f.registerCassettes(cmd)
	f.db.register(cmd)
	cmd.Flags().StringVar(&f.tracePath, "trace", "", "write the run's events to this JSONL file")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "result format: text or json")
	return cmd
}

func (f *agentFlags) run(cmd *cobra.Command, s *streams, dir, task string) error {
	if err := checkFormat("--output", f.output); err != nil {
		return err
	}
	if task == "" {
		return usageErr("the task is empty: say what the agent should do")
	}
	ctx := cmd.Context()
	st, dsn, p, err := f.open(ctx, s, dir)
	if err != nil {
		return err
	}
	defer closeStore(s, st)
	defer closeProject(s, p)
	svc, err := newSession(ctx, st, p)
	if err != nil {
		return err
	}
	res, _, err := f.ask(ctx, s, svc, p, st, dsn, "", task)
	if err != nil {
		return err
	}
	return &exitError{code: exitCode(ctx, res)}
}

// open loads the agent of dir (load), checks that it can start
// (checkStart), and only then opens the store: an agent that cannot run
// writes nothing. Its workflow tools keep their tasks in the store, which
// the first of them opens. The caller closes the project and the store.
func (f *agentFlags) open(ctx context.Context, s *streams, dir string) (store.Store, string, *project.Project, error) {
	lazy := &lazyStore{db: &f.db}
	p, err := f.load(s, dir, lazy.workflows(ctx, f.trustedToolsOnly))
	if err == nil {
		err = checkStart(s, p)
	}
	var st store.Store
	if err == nil {
		st, err = lazy.open(ctx)
	}
	if err != nil {
		if p != nil {
			closeProject(s, p)
		}
		lazy.close(s)
		return nil, "", nil, err
	}
	return st, lazy.dsn, p, nil
}

// load checks dir and the model flags and loads the agent of dir; workflow
// makes its workflow tools (project.LoadOptions.Workflow).
func (f *agentFlags) load(s *streams, dir string, workflow func(path string) (tool.Tool, error)) (*project.Project, error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if !project.IsAgentDir(dir) {
		return nil, usageErr("%s holds no agent.yaml (an agent folder holds agent.yaml, and no flow.yaml)", dir)
	}
	if err := f.checkModelFlags(); err != nil {
		return nil, err
	}
	o := &project.LoadOptions{Script: f.script, Config: f.config, Model: f.model, Record: f.record, Replay: f.replay,
		TrustedToolsOnly: f.trustedToolsOnly, Workflow: workflow}
	p, err := project.LoadAgent(dir, o)
	if err != nil {
		return nil, loadError(s, err)
	}
	s.use(p)
	return p, nil
}

func closeProject(s *streams, p *project.Project) {
	if cerr := p.Close(); cerr != nil {
		fmt.Fprintf(s.err, "rein: %v\n", cerr)
	}
}

// newSession is the session service of the agent p over st.
func newSession(ctx context.Context, st store.Store, p *project.Project) (*session.Service, error) {
	c, err := rein.Open(ctx, rein.Config{Store: st})
	if err != nil {
		return nil, err
	}
	return session.New(c, p, nil)
}

// ask runs the agent on message, in the session sessionID ("" for none:
// rein agent), and prints its transcript and result (text, or the one
// --output json object), and what it waits on. A session whose newest run
// has not finished is the *session.WaitingError of svc.Next.
func (f *agentFlags) ask(ctx context.Context, s *streams, svc *session.Service, p *project.Project, st store.Store, dsn, sessionID, message string) (*rein.Result, *session.Reply, error) {
	req, err := svc.Next(ctx, sessionID, message)
	if err != nil {
		return nil, nil, err
	}
	var watch *live
	var extra trace.Sink
	if f.output != "json" {
		// the conversation as it happens: text as written, calls as they settle
		watch = newLive(s.out)
		extra = watch
	}
	res, err := startWatched(ctx, s, p, st, dsn, &req.Input, req.Options, f.tracePath, false, extra)
	if err != nil {
		return nil, nil, err
	}
	replyCtx := ctx
	if res.Interrupted {
		// the run stays resumable (afterInterrupt said how to go on): its
		// transcript so far is read and printed, and the caller exits 130.
		replyCtx = context.WithoutCancel(ctx)
	}
	rep, err := svc.Reply(replyCtx, res)
	if err != nil {
		return nil, nil, err
	}
	if f.output == "json" && f.jsonLines {
		if err := json.NewEncoder(s.out).Encode(toAgentJSON(rep)); err != nil {
			return nil, nil, failed("write result: %w", err)
		}
	} else if f.output == "json" {
		if err := encodeJSON(s, toAgentJSON(rep)); err != nil {
			return nil, nil, err
		}
	} else {
		watch.finish(rep.Turns, rep.Answer)
		if !f.chat {
			// rein agent: the run's report after its conversation; rein
			// chat prints the answer only (and what stopped it)
			// (without its outputs: the answer, printed above as written)
			report := *res
			report.Outputs = nil
			writeResultText(s, &report, stepOrder(p.Flow))
		} else if res.Error != nil {
			fmt.Fprintf(s.out, "error (%s): %s\n", res.Error.Class, res.Error.Error())
		}
		writePending(s.out, res.RunID, dsn, res.Pending, nil)
	}
	return res, rep, nil
}

// agentJSON is the one object `rein agent --output json` prints.
type agentJSON struct {
	RunID   string            `json:"run_id"`
	Status  string            `json:"status"`
	Answer  any               `json:"answer"`
	Calls   []agentCallJSON   `json:"calls"`
	Usage   session.Usage     `json:"usage"`
	Error   *rein.RunError    `json:"error"`
	Pending []*store.Approval `json:"pending"`
	// AnsweredBy names the agent that answered when the conversation was
	// handed over (outermost first); absent when the agent itself did.
	AnsweredBy []string `json:"answered_by,omitempty"`
}

type agentCallJSON struct {
	Turn        int                `json:"turn"`
	Tool        string             `json:"tool"`
	Args        json.RawMessage    `json:"args"`
	Status      session.CallStatus `json:"status"`
	Observation string             `json:"observation"`
}

func toAgentJSON(rep *session.Reply) agentJSON {
	res := rep.Result
	out := agentJSON{RunID: res.RunID, Status: string(res.Status), Answer: rep.Answer, Calls: []agentCallJSON{},
		Usage: rep.Usage, Error: res.Error, Pending: res.Pending, AnsweredBy: rep.AnsweredBy}
	if res.Status == trace.RunSucceeded {
		out.Status = "answered"
	}
	if out.Pending == nil {
		out.Pending = []*store.Approval{}
	}
	for _, t := range rep.Turns {
		for _, c := range t.Calls {
			args := json.RawMessage(c.Args)
			if !json.Valid(args) {
				args, _ = json.Marshal(c.Args)
			}
			out.Calls = append(out.Calls, agentCallJSON{Turn: t.N, Tool: c.Tool, Args: args, Status: c.Status, Observation: runs.Clip(c.Observation, 200)})
		}
	}
	return out
}

// serveWorkflows sets o.Workflow, unless it is set, to serve the workflow
// tools agents declare (workflow:) over st: each flow is loaded as o says
// (--trusted-tools-only), its own agents served the same way.
func serveWorkflows(o *project.LoadOptions, st store.Store) {
	if o.Workflow != nil {
		return
	}
	nested := &project.LoadOptions{TrustedToolsOnly: o.TrustedToolsOnly}
	nested.Workflow = agentWorkflow(st, nested)
	o.Workflow = nested.Workflow
}

// lazyStore is a command's --db store, opened on first use (a workflow
// tool an agent declares, or the run itself) and closed by close.
type lazyStore struct {
	db  *dbFlag
	st  store.Store
	dsn string
}

// open opens the store if it is not open yet, and returns it.
func (l *lazyStore) open(ctx context.Context) (store.Store, error) {
	if l.st == nil {
		st, dsn, err := l.db.open(ctx)
		if err != nil {
			return nil, err
		}
		l.st, l.dsn = st, dsn
	}
	return l.st, nil
}

// close closes the store if it was opened.
func (l *lazyStore) close(s *streams) {
	if l.st != nil {
		closeStore(s, l.st)
	}
}

// workflows is LoadOptions.Workflow over the store, which it opens when
// the first workflow tool is made; each flow is loaded as trusted says
// (--trusted-tools-only), its own agents served the same way.
func (l *lazyStore) workflows(ctx context.Context, trusted bool) func(path string) (tool.Tool, error) {
	return func(path string) (tool.Tool, error) {
		st, err := l.open(ctx)
		if err != nil {
			return nil, err
		}
		o := &project.LoadOptions{TrustedToolsOnly: trusted}
		serveWorkflows(o, st)
		return o.Workflow(path)
	}
}

// agentWorkflow serves the workflow tools agents declare (workflow:) over
// st, each flow loaded with load (project.LoadOptions.Workflow).
func agentWorkflow(st store.Store, load *project.LoadOptions) func(path string) (tool.Tool, error) {
	return func(path string) (tool.Tool, error) {
		tools, err := workflowTools([]string{path}, st, load)
		if err != nil {
			return nil, err
		}
		return tools[0], nil
	}
}
