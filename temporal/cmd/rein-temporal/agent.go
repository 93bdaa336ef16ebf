package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/reinhq/rein/project"
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
	var jsonOf func(*temporal.Status, []temporal.Pending) (any, error)
	if output == "json" {
		jsonOf = func(st *temporal.Status, pend []temporal.Pending) (any, error) {
			return agentResultOf(ctx, &c, cl, st, pend)
		}
	}
	return followWith(ctx, cl, wr.GetID(), jsonOf, stdout, stderr, func(st *temporal.Status) {
		if a := answerOf(st); a != "" {
			fmt.Fprintln(stdout, a)
		}
	})
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
