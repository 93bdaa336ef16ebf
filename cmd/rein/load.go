package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/tool"
)

// loadFlags are the flags every command that loads a flow takes.
type loadFlags struct {
	script, config        string
	model, record, replay string
	trustedToolsOnly      bool
	// workflow, when set, serves the workflow tools agents declare
	// (project.LoadOptions.Workflow).
	workflow func(path string) (tool.Tool, error)
}

// trustedToolsUsage is the help of --trusted-tools-only.
const trustedToolsUsage = "refuse a flow that declares tools: of its own (they run commands); allow only the tools of rein.yaml"

func (l *loadFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&l.trustedToolsOnly, "trusted-tools-only", false, trustedToolsUsage)
	cmd.Flags().StringVar(&l.script, "script", "", "scripted-model script answering every model (default: script.yaml in the flow's folder)")
	cmd.Flags().StringVar(&l.config, "config", "", "rein.yaml to use (default: rein.yaml beside the flow)")
	cmd.Flags().StringVar(&l.model, "model", "", "answer every model name with this model: a rein.yaml models: name or provider/model (e.g. openai/gpt-4o-mini)")
}

// registerCassettes adds --record and --replay, for the commands that call
// models.
func (l *loadFlags) registerCassettes(cmd *cobra.Command) {
	cmd.Flags().StringVar(&l.record, "record", "", "write every model exchange to this cassette file")
	cmd.Flags().StringVar(&l.replay, "replay", "", "answer every model call from this cassette file; a request it does not hold fails")
}

// load loads a project; flow problems are printed and become exit code 2.
// loadOptions are the flags' project.LoadOptions.
func (l *loadFlags) loadOptions() *project.LoadOptions {
	return &project.LoadOptions{Script: l.script, Config: l.config, Model: l.model, Record: l.record, Replay: l.replay,
		TrustedToolsOnly: l.trustedToolsOnly, Workflow: l.workflow}
}

func (l *loadFlags) load(s *streams, path string) (*project.Project, error) {
	if err := l.checkModelFlags(); err != nil {
		return nil, err
	}
	p, err := project.Load(path, l.loadOptions())
	if err != nil {
		return nil, loadError(s, err)
	}
	s.use(p)
	for _, w := range p.Flow.Warnings {
		fmt.Fprintln(s.err, w.String())
	}
	for _, w := range p.AtRestWarnings() {
		fmt.Fprintln(s.err, w.String())
	}
	return p, nil
}

// checkStart refuses, before a run exists, a project that would fail only
// once journaled (project.Project.CheckStart): the program of an exec tool
// its steps may call is missing, or a model they may call does not open
// (its API key is not set). Each problem is printed located; the error
// exits 2: nothing ran, nothing was written.
func checkStart(s *streams, p *project.Project) error {
	diags := p.CheckStart()
	if len(diags) == 0 {
		return nil
	}
	writeDiagnostics(s.err, diags)
	return &exitError{code: exitUsage, err: fmt.Errorf("%d %s before the run could start; nothing ran, nothing was written", len(diags), pluralize(len(diags), "problem", "problems"))}
}

// checkModelFlags refuses model flags that contradict each other: each of
// --replay, --model and --script answers every model call.
func (l *loadFlags) checkModelFlags() error {
	if l.replay != "" && (l.record != "" || l.model != "" || l.script != "") {
		return usageErr("--replay answers every model call: it does not go with --record, --model or --script")
	}
	if l.model != "" && l.script != "" {
		return usageErr("--model and --script both answer every model name: give one")
	}
	return nil
}

// loadError prints located problems and returns the usage exit.
func loadError(s *streams, err error) error {
	var fe *flow.Error
	if errors.As(err, &fe) {
		writeDiagnostics(s.err, fe.Diagnostics)
		n := 0
		for _, d := range fe.Diagnostics {
			if !d.Warning {
				n++
			}
		}
		return &exitError{code: exitUsage, err: fmt.Errorf("%d %s; nothing ran", n, pluralize(n, "problem", "problems"))}
	}
	return &exitError{code: exitUsage, err: err}
}

func pluralize(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// readInput reads the run input: --input-json, else --input FILE, else the
// folder's input.json, else {}. "-" reads standard input.
func readInput(s *streams, inline, file, fallback string) (any, error) {
	var data []byte
	var src string
	switch {
	case inline != "" && file != "":
		return nil, usageErr("pass --input or --input-json, not both")
	case inline != "":
		data, src = []byte(inline), "--input-json"
	case file == "-":
		b, err := readAllLimited(s.in)
		if err != nil {
			return nil, usageErr("read input from stdin: %v", err)
		}
		data, src = b, "stdin"
	case file != "" || fallback != "":
		if file == "" {
			file = fallback
		}
		b, err := project.ReadInputFile(file)
		if err != nil {
			return nil, usageErr("read input: %v", err)
		}
		data, src = b, file
	default:
		return map[string]any{}, nil
	}
	v, err := project.ParseInput(data, src)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return v, nil
}

// maxInputBytes bounds a run's input (--input FILE, stdin, input.json).
const maxInputBytes = project.MaxInputBytes

func readAllLimited(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxInputBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxInputBytes {
		return nil, fmt.Errorf("input is more than the %d bytes it may have", maxInputBytes)
	}
	return b, nil
}
