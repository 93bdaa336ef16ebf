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
	"github.com/reinhq/rein/schema"
	"github.com/reinhq/rein/store/sqlite"
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
expressions, tools and models, and that the program of every exec tool is
there to run (a relative command against the folder of the file that
declares it, a bare name in PATH). Every problem is printed as
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
				load := rein.Load
				opts := &rein.LoadOptions{Script: l.script, Config: l.config, TrustedToolsOnly: l.trustedToolsOnly}
				nested := &rein.LoadOptions{TrustedToolsOnly: l.trustedToolsOnly}
				nested.Workflow = func(flowPath string) (tool.Tool, error) { return checkWorkflow(cmd.Context(), flowPath, nested) }
				opts.Workflow = nested.Workflow // agents' workflow tools, and theirs
				if rein.IsAgentDir(path) {
					load = rein.LoadAgent // an agent folder: agent.yaml, checked in place
				}
				p, err := load(path, opts)
				var fe *flow.Error
				switch {
				case err == nil:
					r.Diagnostics = append(r.Diagnostics, p.Flow.Warnings...)
					missing := p.CheckCommands()
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
	var format, output string
	cmd := &cobra.Command{
		Use:   "graph PATH",
		Short: "Draw a flow's main path and failure paths (Mermaid or DOT)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case output == "":
			case cmd.Flags().Changed("format") && format != output:
				return usageErr("-o/--output %s and --format %s disagree: give one", output, format)
			default:
				format = output
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
func checkWorkflow(ctx context.Context, path string, load *rein.LoadOptions) (tool.Tool, error) {
	dir, err := os.MkdirTemp("", "rein-validate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
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
