package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/graph"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/schema"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace/jsonl"
	"github.com/reinhq/rein/trace/summary"
)

func newValidateCmd(s *streams) *cobra.Command {
	l := &loadFlags{}
	var output string
	cmd := &cobra.Command{
		Use:   "validate PATH...",
		Short: "Check flows (and agent folders) without running anything; every problem as file:line:col",
		Long: `Check flows without running anything: the flow format, schemas, references,
expressions, tools and models, a tool step's args against the tool's
input_schema, that the program of every exec tool is there to run (a
relative command against the folder of the file that declares it, a bare
name in PATH), and that every model the steps may call opens (its API key
variable is set). Every problem is printed as
file:line:col: message; exit 2 when a flow does not validate.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return usageErr("--output must be text or json, not %q", output)
			}
			type fileResult struct {
				Path        string            `json:"path"`
				OK          bool              `json:"ok"`
				Diagnostics []flow.Diagnostic `json:"diagnostics"`
				Error       string            `json:"error,omitempty"`
			}
			var results []fileResult
			bad := 0
			for _, path := range args {
				r := fileResult{Path: path, Diagnostics: []flow.Diagnostic{}}
				load := project.Load
				opts := &project.LoadOptions{Script: l.script, Config: l.config, Model: l.model, TrustedToolsOnly: l.trustedToolsOnly}
				nested := &project.LoadOptions{TrustedToolsOnly: l.trustedToolsOnly}
				nested.Workflow = func(flowPath string) (tool.Tool, error) { return checkWorkflow(cmd.Context(), flowPath, nested) }
				opts.Workflow = nested.Workflow // agents' workflow tools, and theirs
				if project.IsAgentDir(path) {
					load = project.LoadAgent // an agent folder: agent.yaml, checked in place
				}
				p, err := load(path, opts)
				var fe *flow.Error
				switch {
				case err == nil:
					r.Diagnostics = append(append(r.Diagnostics, p.Flow.Warnings...), p.AtRestWarnings()...)
					missing := append(p.CheckCommands(), p.CheckModelsOpen()...)
					r.OK, r.Diagnostics = len(missing) == 0, append(r.Diagnostics, missing...)
				case errors.As(err, &fe):
					r.Diagnostics = fe.Diagnostics
				default:
					r.Error = err.Error()
				}
				if !r.OK {
					bad++
				}
				results = append(results, r)
				if output == "text" {
					writeDiagnostics(s.err, r.Diagnostics)
					if r.Error != "" {
						fmt.Fprintln(s.err, r.Error)
					}
					if r.OK {
						fmt.Fprintf(s.out, "%s: ok (%s, %d %s)\n", path, p.Flow.Name, len(p.Flow.Steps), pluralize(len(p.Flow.Steps), "step", "steps"))
					}
				}
			}
			if output == "json" {
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(results); err != nil {
					return err
				}
			}
			if bad > 0 {
				return &exitError{code: exitUsage, err: fmt.Errorf("%d of %d %s did not validate", bad, len(args), pluralize(len(args), "flow", "flows"))}
			}
			return nil
		},
	}
	l.register(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}

func newGraphCmd(s *streams) *cobra.Command {
	l := &loadFlags{}
	var db dbFlag
	var format, output, runRef string
	cmd := &cobra.Command{
		Use:   "graph PATH",
		Short: "Draw a flow's main path and failure paths, or a run's effect graph (Mermaid or DOT)",
		Long: `Draw the flow at PATH: its main path and its failure paths. With --run RUN
(and --db), draw the effect graph of a stored run instead: each call that
touched the world, the resources it read, wrote or sent, the data edges
between the calls, and the compensations made since (rein runs effects
lists the same).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if runRef != "" {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case output == "":
			case cmd.Flags().Changed("format") && format != output:
				return usageErr("-o/--output %s and --format %s disagree: give one", output, format)
			default:
				format = output
			}
			if runRef != "" {
				return withRuns(cmd, s, &db, nil, func(ctx context.Context, c *rein.Client, dsn string) error {
					v, err := c.Runs().Effects(ctx, runRef)
					if err != nil {
						return runsError(s, dsn, runRef, err)
					}
					if err := graph.RenderEffects(s.out, effectsGraph(v), format); err != nil {
						return usageErr("%v", err)
					}
					return nil
				})
			}
			if cmd.Flags().Changed("db") {
				return usageErr("--db goes with --run RUN: a flow's graph needs no store")
			}
			p, err := l.load(s, args[0])
			if err != nil {
				return err
			}
			if err := graph.Render(s.out, p.Flow, format); err != nil {
				return usageErr("%v", err)
			}
			return nil
		},
	}
	l.register(cmd)
	db.register(cmd)
	cmd.Flags().StringVar(&runRef, "run", "", "draw the effect graph of this stored run (an ID, a prefix, or last) instead of a flow")
	_ = cmd.RegisterFlagCompletionFunc("run", completeRunArgs)
	cmd.Flags().StringVarP(&output, "output", "o", "", "drawing format: mermaid or dot (default mermaid)")
	cmd.Flags().StringVar(&format, "format", "mermaid", "drawing format: mermaid or dot (the same as -o)")
	_ = cmd.RegisterFlagCompletionFunc("output", fixedValues("mermaid", "dot"))
	_ = cmd.RegisterFlagCompletionFunc("format", fixedValues("mermaid", "dot"))
	return cmd
}

func newTraceCmd(s *streams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "trace FILE",
		Short: "Summarise a JSONL trace: slowest steps, tokens, retries, whose failure",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			events, err := jsonl.ReadFile(args[0])
			if err != nil {
				return usageErr("%v", err)
			}
			sum := summary.Summarize(events)
			switch output {
			case "text":
				return sum.WriteText(s.out)
			case "json":
				return sum.WriteJSON(s.out)
			}
			return usageErr("--output must be text or json, not %q", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}

func newSchemaCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Use:       "schema [flow|config|agent|plan]",
		Short:     "Print the JSON Schema of the flow format (or of rein.yaml, agent.yaml, or a plan document) for editors",
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: []string{"flow", "config", "agent", "plan"},
		RunE: func(cmd *cobra.Command, args []string) error {
			which := "flow"
			if len(args) == 1 {
				which = args[0]
			}
			switch which {
			case "flow":
				_, err := s.out.Write(schema.Flow())
				return err
			case "config":
				_, err := s.out.Write(schema.Config())
				return err
			case "agent":
				_, err := s.out.Write(schema.Agent())
				return err
			case "plan":
				_, err := s.out.Write(schema.Plan())
				return err
			}
			return usageErr("schema: unknown %q: use flow, config, agent or plan", which)
		},
	}
}

// checkWorkflow loads the workflow tool of the flow folder path, as an
// agent's workflow: entry declares it, over a throwaway store: rein
// validate checks the flow and the tool's name, and runs nothing.
func checkWorkflow(ctx context.Context, path string, load *project.LoadOptions) (tool.Tool, error) {
	dir, err := os.MkdirTemp("", "rein-validate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(ctx, filepath.Join(dir, "rein.db"))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	tools, err := workflowTools([]string{path}, st, load)
	if err != nil {
		return nil, err
	}
	return tools[0], nil
}
