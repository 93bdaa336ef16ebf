package main

import (
	"context"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// maxSessionRuns bounds the runs rein sessions show reads of one session.
const maxSessionRuns = 1000

func newSessionsCmd(s *streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List, show and delete chat sessions (rein chat --session) kept in a run store",
		Long: `Work with the sessions of a run store (--db, default $REIN_DB, else
` + defaultDB + `): the conversations rein chat --session ID and session.Service
keep, each message one agent run recorded with the session's id. Every
subcommand takes --db and -o/--output text|json.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				_ = cmd.Help()
				return &exitError{code: exitUsage}
			}
			return usageErr("unknown command %q for rein sessions; see rein sessions --help", args[0])
		},
	}
	cmd.AddCommand(newSessionsListCmd(s), newSessionsShowCmd(s), newSessionsDeleteCmd(s))
	return cmd
}

// sessionJSON is a row of rein sessions list -o json: the store's session
// and the status of its newest run.
type sessionJSON struct {
	*store.Session
	Status trace.RunStatus `json:"status"`
}

func newSessionsListCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	var flowName string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List sessions, the one with the newest message first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return usageErr("--limit must be positive, not %d", limit)
			}
			return f.withStore(cmd, s, nil, func(ctx context.Context, c *rein.Client, dsn string) error {
				list, err := c.Store().Sessions(ctx, &store.ListSessionsParams{Flow: flowName, Limit: limit})
				if err != nil {
					return failed("%s: %w", redactDSN(dsn), err)
				}
				rows := make([]sessionJSON, 0, len(list))
				for _, ss := range list {
					r, err := c.Store().GetRun(ctx, ss.LastRun)
					if err != nil {
						return failed("%s: read run %s of session %s: %w", redactDSN(dsn), ss.LastRun, ss.ID, err)
					}
					rows = append(rows, sessionJSON{Session: ss, Status: r.Status})
				}
				if f.output == "json" {
					return encodeJSON(s, rows)
				}
				if len(rows) == 0 {
					fmt.Fprintf(s.err, "rein: no sessions in %s\n", redactDSN(dsn))
					return nil
				}
				tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "SESSION\tAGENT\tMESSAGES\tLAST RUN\tSTATUS\tSTARTED\tLAST")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", printable(r.ID), r.Flow, r.Runs, r.LastRun, r.Status, stamp(r.CreatedAt), stamp(r.LastAt))
				}
				return tw.Flush()
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&flowName, "flow", "", "only sessions of this agent (its name)")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many sessions")
	return cmd
}

// sessionRunJSON is one message of rein sessions show -o json: its run,
// and what it added to the conversation (a run that did not succeed: its
// task only).
type sessionRunJSON struct {
	RunID     string            `json:"run_id"`
	Flow      string            `json:"flow"`
	Status    trace.RunStatus   `json:"status"`
	CreatedAt time.Time         `json:"created_at"`
	Items     []session.Message `json:"items"`
	// Guardrails are the guardrail trips of the message's run.
	Guardrails []runs.GuardrailWhy `json:"guardrails,omitempty"`
	// AnsweredBy is the agent that answered (a succeeded run): the
	// session's own, or the one the conversation was handed over to.
	AnsweredBy string `json:"answered_by,omitempty"`
}

func newSessionsShowCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	var flowName string
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a session's conversation: each message's run, its tool calls and their results, and the answer",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, s, nil, func(ctx context.Context, c *rein.Client, dsn string) error {
				list, err := c.Store().ListRuns(ctx, &store.ListRunsParams{Session: args[0], Flow: flowName, Limit: maxSessionRuns})
				if err != nil {
					return failed("%s: %w", redactDSN(dsn), err)
				}
				if len(list) == 0 {
					return usageErr("no session %q in %s: rein sessions list shows them", args[0], redactDSN(dsn))
				}
				slices.Reverse(list) // oldest first
				out := make([]sessionRunJSON, 0, len(list))
				for _, r := range list {
					m := sessionRunJSON{RunID: r.ID, Flow: r.Flow, Status: r.Status, CreatedAt: r.CreatedAt}
					if r.Status == trace.RunSucceeded {
						var turns []session.Turn
						if m.Items, turns, err = session.ExchangeOf(ctx, c.Store(), r); err != nil {
							return failed("%s: %w", redactDSN(dsn), err)
						}
						m.AnsweredBy = r.Flow
						if by := session.AnsweredBy(turns); len(by) > 0 {
							m.AnsweredBy = by[len(by)-1]
						}
					} else if in, ok := runTask(r); ok {
						m.Items = []session.Message{{Role: "user", Content: in}}
					}
					if m.Items == nil {
						m.Items = []session.Message{}
					}
					why, err := c.Runs().WhyRun(ctx, r.ID)
					if err != nil {
						return failed("%s: %w", redactDSN(dsn), err)
					}
					m.Guardrails = why.Guardrails
					out = append(out, m)
				}
				if f.output == "json" {
					return encodeJSON(s, out)
				}
				for _, m := range out {
					fmt.Fprintf(s.out, "run %s (%s) %s %s\n", m.RunID, m.Flow, m.Status, stamp(m.CreatedAt))
					writeItems(s, m.Items)
					for _, g := range m.Guardrails {
						did := "stopped the run"
						if g.OnTrip == "ask" {
							did = "asked a person"
						}
						fmt.Fprintf(s.out, "  guardrail %s (%s, %s) tripped and %s: %s\n", g.Name, g.Kind, g.Side, did, printable(runs.Clip(g.Reason, 200)))
					}
					if m.AnsweredBy != "" {
						fmt.Fprintf(s.out, "  answered by: %s\n", printable(m.AnsweredBy))
					}
					if m.Status != trace.RunSucceeded {
						fmt.Fprintf(s.out, "  (no answer: the run is %s; rein runs show %s)\n", m.Status, m.RunID)
					}
				}
				return nil
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&flowName, "flow", "", "only the runs of this agent (its name)")
	return cmd
}

// runTask is the task of an agent run's input.
func runTask(r *store.Run) (string, bool) {
	in, err := session.InputOf(r)
	if err != nil || in.Task == "" {
		return "", false
	}
	return in.Task, true
}

// writeItems prints a conversation's items, a tool call and its result
// one line each.
func writeItems(s *streams, items []session.Message) {
	for _, m := range items {
		switch m.Role {
		case "user":
			fmt.Fprintf(s.out, "  user: %s\n", printable(runs.Clip(m.Content, 400)))
		case "tool":
			status := "ok"
			if m.IsError {
				status = "error"
			}
			fmt.Fprintf(s.out, "    -> %s %s: %s\n", m.Tool, status, printable(runs.Clip(m.Content, 200)))
		default:
			if m.Content != "" {
				fmt.Fprintf(s.out, "  assistant: %s\n", printable(runs.Clip(m.Content, 400)))
			}
			for _, c := range m.ToolCalls {
				fmt.Fprintf(s.out, "  call %s %s\n", c.Tool, printable(runs.Clip(c.Args, 200)))
			}
		}
	}
}

func newSessionsDeleteCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a session: its finished runs, with their journals, approvals and unreferenced blobs",
		Long: `Delete the session ID: every finished run recorded with it (of any agent),
with its events, steps, approvals and the blobs no other run refers to,
whatever their retention. A run of the session that has not finished (it
waits for a person, or runs) is kept and named: cancel it (rein runs cancel
RUN) and delete the session again.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			return f.withStore(cmd, s, nil, func(ctx context.Context, c *rein.Client, dsn string) error {
				list, err := c.Store().ListRuns(ctx, &store.ListRunsParams{Session: id, Limit: maxSessionRuns})
				if err != nil {
					return failed("%s: %w", redactDSN(dsn), err)
				}
				if len(list) == 0 {
					return usageErr("no session %q in %s: rein sessions list shows them", id, redactDSN(dsn))
				}
				now := time.Now()
				res, err := c.Prune(ctx, &store.PruneParams{Session: id, Before: now, Now: now})
				if err != nil {
					return failed("delete session %s from %s: %w", id, redactDSN(dsn), err)
				}
				var kept []string
				for _, r := range list {
					if !r.Finished() {
						kept = append(kept, r.ID)
					}
				}
				if f.output == "json" {
					return encodeJSON(s, map[string]any{"session": id, "deleted_runs": res.Runs, "blobs": res.Blobs, "kept_runs": orEmpty(kept)})
				}
				fmt.Fprintf(s.out, "deleted session %s: %d run(s), %d blob(s)\n", printable(id), res.Runs, res.Blobs)
				for _, k := range kept {
					fmt.Fprintf(s.out, "kept run %s: it has not finished; cancel it (rein runs cancel %s) and delete the session again\n", k, k)
				}
				if len(kept) > 0 {
					return &exitError{code: exitWaiting}
				}
				return nil
			})
		},
	}
	f.register(cmd)
	return cmd
}
