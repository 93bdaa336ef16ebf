package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/engine"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/jsonl"
)

type runFlags struct {
	loadFlags
	input, inputJSON, tracePath, output string
}

func newRunCmd(s *streams) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run PATH",
		Short: "Validate and run a flow (a flow file, or a folder holding flow.yaml)",
		Long: `Validate and run a flow. PATH is a flow file or a folder holding flow.yaml;
from that folder input.json, script.yaml and rein.yaml are picked up unless
--input, --input-json, --script or --config say otherwise.

Progress goes to stderr (a live list on a terminal, one line per event
otherwise); the result goes to stdout (--output json: exactly one JSON object).
Exit codes: 0 succeeded, 1 failed, 2 invalid flow or input (nothing ran),
3 waiting, 130 interrupted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, s, args[0]) },
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.input, "input", "", "run input: a JSON file, or - for stdin (default: input.json in the flow's folder)")
	cmd.Flags().StringVar(&f.inputJSON, "input-json", "", "run input as inline JSON")
	cmd.Flags().StringVar(&f.tracePath, "trace", "", "write the run's events to this JSONL file")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "result format: text or json")
	return cmd
}

func (f *runFlags) run(cmd *cobra.Command, s *streams, path string) error {
	if f.output != "text" && f.output != "json" {
		return usageErr("--output must be text or json, not %q", f.output)
	}
	p, err := f.load(s, path)
	if err != nil {
		return err
	}
	input, err := readInput(s, f.inputJSON, f.input, p.InputPath)
	if err != nil {
		return err
	}
	if _, err := engine.CheckInput(p.Flow, input); err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("%v; nothing ran", err)}
	}
	progress := newProgress(s.err, p.Flow)
	sinks := []trace.Sink{progress}
	var js *jsonl.Sink
	if f.tracePath != "" {
		if js, err = jsonl.Create(f.tracePath); err != nil {
			return usageErr("--trace: %v", err)
		}
		sinks = append(sinks, js)
	}
	progress.Start()
	res, err := p.Run(cmd.Context(), input, &engine.Config{Sink: trace.Multi(sinks...)})
	progress.Stop()
	if js != nil {
		if cerr := js.Close(); cerr != nil {
			fmt.Fprintf(s.err, "rein: writing trace %s: %v\n", f.tracePath, cerr)
		}
	}
	if err != nil {
		var ie *engine.InputError
		if errors.As(err, &ie) {
			return &exitError{code: exitUsage, err: fmt.Errorf("%v; nothing ran", err)}
		}
		return &exitError{code: exitUsage, err: err}
	}
	if f.output == "json" {
		if err := writeResultJSON(s, res); err != nil {
			return err
		}
	} else {
		writeResultText(s, res, p.Flow)
	}
	return &exitError{code: exitCode(res)}
}

func exitCode(res *engine.Result) int {
	switch res.Status {
	case trace.RunSucceeded:
		return exitOK
	case trace.RunWaiting:
		return exitWaiting
	case trace.RunCancelled:
		return exitInterrupted
	}
	return exitRunFailed
}

// resultJSON is the one object `rein run --output json` prints.
type resultJSON struct {
	RunID   string                    `json:"run_id"`
	Flow    string                    `json:"flow"`
	Status  trace.RunStatus           `json:"status"`
	Outputs map[string]any            `json:"outputs"`
	Steps   map[string]stepResultJSON `json:"steps"`
	Usage   engine.Usage              `json:"usage"`
	Error   *engine.RunError          `json:"error"`
}

type stepResultJSON struct {
	Status     trace.StepStatus `json:"status"`
	Attempts   int              `json:"attempts"`
	DurationMS int64            `json:"duration_ms"`
	Error      *engine.RunError `json:"error,omitempty"`
}

func writeResultJSON(s *streams, res *engine.Result) error {
	out := resultJSON{RunID: res.RunID, Flow: res.Flow, Status: res.Status, Outputs: res.Outputs, Usage: res.Usage,
		Error: res.Error, Steps: map[string]stepResultJSON{}}
	for id, st := range res.Steps {
		out.Steps[id] = stepResultJSON{Status: st.Status, Attempts: st.Attempts, DurationMS: st.Duration.Milliseconds(), Error: st.Error}
	}
	enc := json.NewEncoder(s.out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return &exitError{code: exitRunFailed, err: fmt.Errorf("write result: %w", err)}
	}
	return nil
}

func writeResultText(s *streams, res *engine.Result, fl *flow.Flow) {
	w := s.out
	fmt.Fprintf(w, "run %s: %s %s in %s\n", res.RunID, res.Flow, res.Status, res.Duration.Round(time.Millisecond))
	for _, step := range fl.Steps {
		id := step.ID
		st := res.Steps[id]
		fmt.Fprintf(w, "  %-24s %-10s attempts=%d %s\n", id, st.Status, st.Attempts, st.Duration.Round(time.Millisecond))
	}
	if res.Usage.LLMCalls > 0 {
		fmt.Fprintf(w, "model calls: %d, tokens: %d in / %d out\n", res.Usage.LLMCalls, res.Usage.TokensIn, res.Usage.TokensOut)
	}
	if res.Error != nil {
		fmt.Fprintf(w, "error (%s", res.Error.Class)
		if res.Error.Budget != "" {
			fmt.Fprintf(w, ", budget %s", res.Error.Budget)
		}
		fmt.Fprintf(w, "): %s\n", res.Error.Error())
	}
	if len(res.Outputs) > 0 {
		b, _ := json.MarshalIndent(res.Outputs, "", "  ")
		fmt.Fprintf(w, "outputs:\n%s\n", b)
	}
}
