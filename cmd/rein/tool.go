package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/server/workflowtool"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

func newToolCmd(s *streams) *cobra.Command {
	var db dbFlag
	var req workflowtool.Request
	var input, data, deliveries string
	cmd := &cobra.Command{
		Use:   "tool FLOW ACTION",
		Short: "Drive a workflow as an agent's tool would: start, submit, submit_from_source, prepare_delivery, status, cancel",
		Long: `Perform one action of the workflow tool of FLOW (the <name>_workflow tool an agent calls) and
print its answer, the JSON object an agent gets: task_id, status, next_actions
(each ready step, its skill, the JSON Schema its output must satisfy, an
instruction), artifacts and, from prepare_delivery, the delivery's files.
A failed action prints {class, error_type, message, hint?, pointer?, problems?, retryable}.

  rein tool FLOW start --input-json '{...}' [--session ID]
  rein tool FLOW submit --task ID --step STEP [--skill SKILL] --data JSON|@file
  rein tool FLOW submit_from_source --task ID --step STEP
  rein tool FLOW prepare_delivery --task ID [--deliveries DIR]
  rein tool FLOW status --task ID
  rein tool FLOW cancel --task ID [--reason TEXT]

Exit codes: 0 the task succeeded, 1 it failed, 3 it waits for the agent (or
a person), 5 it was cancelled; an action refused is 2 (nothing recorded as
accepted), or 4 when it conflicts with another submission (read status,
then retry).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Action = args[1]
			if actions := workflowtool.Actions(); !slices.Contains(actions, req.Action) {
				return usageErr("unknown action %q: use %s", req.Action, strings.Join(actions, ", "))
			}
			var err error
			if req.Input, err = jsonArg("--input-json", input); err != nil {
				return err
			}
			if req.Data, err = jsonArg("--data", data); err != nil {
				return err
			}
			st, _, err := db.open(cmd.Context())
			if err != nil {
				return err
			}
			defer closeStore(s, st)
			// The workflow tools the flow's agents declare drive tasks of st too.
			load := &project.LoadOptions{Workflow: workflowtool.AgentTools(st, false)}
			w, err := workflowtool.New(args[0], &workflowtool.Options{Store: st, DeliveryDir: deliveries, Load: load})
			if err != nil {
				return usageErr("%s: %v", args[0], err)
			}
			return toolAnswer(cmd.Context(), s, w, &req)
		},
	}
	db.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&input, "input-json", "", "start: the task's input as JSON, or @file")
	fl.StringVar(&req.SessionID, "session", "", "start: the agent's session id")
	fl.StringVar(&req.WorkflowID, "workflow-id", "", "start: the workflow's id (checked against the flow's)")
	fl.StringVar(&req.TaskID, "task", "", "the task (start answers its task_id)")
	fl.StringVar(&req.StepID, "step", "", "submit, submit_from_source: the step")
	fl.StringVar(&req.Skill, "skill", "", "submit, submit_from_source: the step's skill")
	fl.StringVar(&data, "data", "", "submit: the step's output as JSON, or @file")
	fl.StringVar(&req.Reason, "reason", "", "cancel: why")
	fl.StringVar(&deliveries, "deliveries", "", "prepare_delivery: the folder deliveries go into (default: deliveries/ beside the flow)")
	_ = cmd.RegisterFlagCompletionFunc("task", cobra.NoFileCompletions)
	return cmd
}

// toolAnswer performs req and prints the answer, or the error object.
func toolAnswer(ctx context.Context, s *streams, w *workflowtool.Workflow, req *workflowtool.Request) error {
	a, err := w.Do(ctx, req)
	if err != nil {
		var e *workflowtool.Error
		if !errors.As(err, &e) {
			return failed("%v", err)
		}
		if werr := encodeJSON(s, e); werr != nil {
			return werr
		}
		code := exitUsage
		switch e.Type {
		case fault.Conflict:
			code = exitConflict
		case fault.Transient:
			code = exitRunFailed
		}
		return &exitError{code: code, err: fmt.Errorf("%s: %s", e.Type, e.Message)}
	}
	if err := encodeJSON(s, a); err != nil {
		return err
	}
	switch a.Status {
	case trace.RunSucceeded:
		return nil
	case trace.RunFailed:
		return &exitError{code: exitRunFailed}
	case trace.RunCancelled:
		return &exitError{code: exitCancelled}
	}
	return &exitError{code: exitWaiting}
}

// jsonArg reads a JSON flag: the text itself, or @file (read up to one
// byte past the workflow tool's request limit, which then refuses it).
func jsonArg(flag, v string) (json.RawMessage, error) {
	if v == "" {
		return nil, nil
	}
	if !strings.HasPrefix(v, "@") {
		return json.RawMessage(v), nil
	}
	f, err := os.Open(v[1:])
	if err != nil {
		return nil, usageErr("%s %s: %v", flag, v, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, workflowtool.DefaultMaxRequestBytes+1))
	if err != nil {
		return nil, usageErr("%s %s: %v", flag, v, err)
	}
	return raw, nil
}

func newRunsArtifactsCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	cmd := &cobra.Command{
		Use:   "artifacts RUN",
		Short: "List a run's artifacts: each accepted output with its step, producer, attempt and sha256",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, s, nil, func(ctx context.Context, c *rein.Client, dsn string) error {
				run, err := c.Runs().Get(ctx, args[0])
				if err != nil {
					return runsError(s, dsn, args[0], err)
				}
				arts, err := workflowtool.ListArtifacts(ctx, c.Store(), run.ID)
				if err != nil {
					return failed("%s: %w", redactDSN(dsn), err)
				}
				if f.output == "json" {
					return encodeJSON(s, arts)
				}
				tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "STEP\tPRODUCER\tATTEMPT\tSHA256")
				for _, a := range arts {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", a.StepID, a.Producer, a.Attempt, a.SHA256)
				}
				return tw.Flush()
			})
		},
	}
	f.register(cmd)
	return cmd
}

// workflowTools makes the workflow tool of each folder of paths over st,
// its flow loaded with load (agent.go's agentWorkflow, validate.go's
// checkWorkflow give one path). An error names the folder: "workflow tool
// of PATH: …". What rein mcp serves is server/mcp's, which also refuses
// two flows of one name.
func workflowTools(paths []string, st store.Store, load *project.LoadOptions) ([]tool.Tool, error) {
	out := make([]tool.Tool, 0, len(paths))
	for _, path := range paths {
		w, err := workflowtool.New(path, &workflowtool.Options{Store: st, Load: load})
		if err != nil {
			return nil, fmt.Errorf("workflow tool of %s: %w", path, err)
		}
		out = append(out, w.Tool())
	}
	return out, nil
}
