package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/temporal"
)

// runAgent starts a run of the agent folder DIR on TASK (its input
// {"task": TASK}) and follows it as rein run does; once the agent
// answered it prints the answer, as a local rein agent does.
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var runID, output string
	var detach bool
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	c.add(fs)
	fs.StringVar(&runID, "run-id", "", "the run's id (the workflow id); a running run of that id is followed, not started again")
	fs.BoolVar(&detach, "detach", false, "start the run and print its id without following it")
	fs.StringVar(&output, "o", "text", "text or json")
	fs.StringVar(&output, "output", "text", "the same as -o")
	pos, err := parse(fs, args)
	if err != nil {
		return exitUsage, err
	}
	if len(pos) != 2 {
		return exitUsage, usageErr("rein agent --temporal takes an agent folder and a task")
	}
	dir, task := pos[0], pos[1]
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs // the worker holds the same folder: the flow's text names it absolutely
	}
	if !project.IsAgentDir(dir) {
		return exitUsage, usageErr(fmt.Sprintf("%s holds no agent.yaml (an agent folder holds agent.yaml, and no flow.yaml)", dir))
	}
	if task == "" {
		return exitUsage, usageErr("the task is empty: say what the agent should do")
	}
	p, err := project.LoadAgent(dir, declared())
	if err != nil {
		return exitUsage, err
	}
	defer p.Close()
	c.keys = p.Codec()
	cl, err := c.dial()
	if err != nil {
		return exitUsage, err
	}
	defer cl.Close()
	wr, err := temporal.StartRun(ctx, cl, p, map[string]any{"task": task}, temporal.StartOptions{RunID: runID, TaskQueue: c.queue})
	if err != nil {
		return exitFailed, err
	}
	fmt.Fprintf(stderr, "rein: run %s (agent %s) on %s, task queue %s\n", wr.GetID(), p.Flow.Name, c.hostport, c.queue)
	if detach {
		fmt.Fprintln(stdout, wr.GetID())
		return exitOK, nil
	}
	var f follower
	if output == "json" {
		f.jsonOf = func(st *temporal.Status, pend []temporal.Pending) (any, error) {
			return agentResultOf(ctx, &c, cl, st, pend)
		}
	} else {
		// the conversation as it happens, as a local rein agent prints it
		// (each call once it settles); the answer once it answered.
		l := &liveCalls{w: stdout, shown: map[string]agent.CallStatus{}, said: map[string]bool{}}
		f.progress = func(st *temporal.Status) { l.poll(ctx, cl, st) }
		f.first = func(st *temporal.Status) {
			l.last(ctx, &c, cl, st)
			if a := answerOf(st); a != "" {
				fmt.Fprintln(stdout, a)
			}
		}
	}
	return followWith(ctx, &c, cl, wr.GetID(), f, stdout, stderr)
}

// liveCalls prints an agent run's calls as they settle, from the session
// its workflow holds (temporal.AgentSessionNow, asked while the agent
// step runs): the text a turn wrote beside its calls, then each call as
// one line ("  -> tool args -> status: observation"), again when its
// status changes (a call that waited for a person, then ran). A run the
// CLI did not see to its end (it settled between two polls) is read from
// its history (last).
type liveCalls struct {
	w io.Writer
	// shown is the status each call was printed with, by attempt and ref;
	// said holds the turns whose text was printed.
	shown map[string]agent.CallStatus
	said  map[string]bool
	// next is when poll may ask again: at most once a second, as each
	// query is a task for a worker.
	next time.Time
}

// poll prints what the agent step's session gained since the last poll,
// while the step runs.
func (l *liveCalls) poll(ctx context.Context, cl client.Client, st *temporal.Status) {
	if time.Now().Before(l.next) {
		return
	}
	l.next = time.Now().Add(time.Second)
	for i, s := range st.Steps {
		if s.ID != project.AgentStep || s.Status != "running" {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ss, err := temporal.AgentSessionNow(qctx, cl, st.RunID, s.ID, i)
		cancel()
		if err == nil {
			l.show(ss)
		}
	}
}

// last prints what the polls missed once the run settled or waits: the
// latest attempt's session as the run's history holds it.
func (l *liveCalls) last(ctx context.Context, c *common, cl client.Client, st *temporal.Status) {
	ss, err := temporal.Sessions(ctx, cl, c.dataConverter(), c.namespace, st.RunID)
	if err != nil || len(ss) == 0 {
		return // the report that follows says how the run ended
	}
	l.show(&ss[len(ss)-1])
}

// show prints s's turns' text and calls not yet printed as they are now.
func (l *liveCalls) show(s *temporal.AgentSession) {
	for _, t := range s.Turns {
		if t.Final {
			continue // the answer, printed after the conversation
		}
		turn := fmt.Sprintf("%d/%d", s.Attempt, t.N)
		if t.Text != "" && !l.said[turn] {
			l.said[turn] = true
			fmt.Fprintln(l.w, t.Text)
		}
		for i := range t.Calls {
			call := &t.Calls[i]
			ref := turn + "/" + strconv.Itoa(call.Index)
			if call.Status == agent.StatusChosen || l.shown[ref] == call.Status {
				continue
			}
			l.shown[ref] = call.Status
			runs.WriteLiveCall(l.w, "  ", call)
		}
	}
}

// answerOf is the agent's answer in st: the output of its one step
// (project.AgentStep) once it answered, its text (a string answer) or its
// JSON; "" before it answered.
func answerOf(st *temporal.Status) string {
	raw, ok := st.Outputs[project.AgentStep]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
