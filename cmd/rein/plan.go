package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/decide"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/server/mcp"
)

// planFlags are the flags of rein plan validate and rein plan run.
type planFlags struct {
	config, output string
	maxSteps       int
	tools          []string
}

func (f *planFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.config, "config", "", "rein.yaml whose tools the plan may use (default: rein.yaml beside the plan, else in the current directory)")
	cmd.Flags().IntVar(&f.maxSteps, "max-steps", decide.DefaultMaxSteps, "longest plan accepted, in steps")
	cmd.Flags().StringSliceVar(&f.tools, "tools", nil, "the tools the plan may call, comma-separated (default: every tool of the rein.yaml)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "result format: text or json")
}

func newPlanCmd(s *streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Validate or run a plan (JSON steps of tool calls) against the tools of a rein.yaml",
		Long: `A plan is what a planner proposes: {"goal": "…", "steps": [{"id", "tool",
"depends_on", "args"}]}, where an arg may be {"$ref": "step_id.path"} into the
output of an earlier step. The tools are those of a rein.yaml: --config FILE,
else rein.yaml beside the plan, else rein.yaml in the current directory.

Every problem is reported with its JSON pointer into the plan; nothing runs
unless the whole plan is valid.`,
	}
	cmd.AddCommand(newPlanValidateCmd(s), newPlanRunCmd(s))
	return cmd
}

func newPlanValidateCmd(s *streams) *cobra.Command {
	f := &planFlags{}
	cmd := &cobra.Command{
		Use:   "validate PLAN.json",
		Short: "Check a plan against the tools without running anything",
		Long: `Check a plan against the tools of a rein.yaml without running anything: a
strict JSON document (no unknown fields or duplicate keys), unique step ids,
known and allowed tools, depends_on and $ref only to earlier steps, $ref paths
the referenced tool's output schema declares, args valid against each tool's
input schema, at most --max-steps steps.

Problems are printed as PLAN.json: /json/pointer: message (--output json:
{"valid": false, "problems": [{"pointer", "message"}]}).
Exit codes: 0 valid, 2 invalid plan or bad usage.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pc, err := f.prepare(s, args[0])
			if err != nil {
				return err
			}
			if pc.Problems != nil {
				return f.reportInvalid(s, args[0], pc.Problems, pc.Cause, false)
			}
			if f.output == "json" {
				return encodeJSON(s, planValidJSON{Valid: true, Goal: pc.Plan.Goal, Steps: len(pc.Plan.Steps), Problems: []decide.Problem{}})
			}
			fmt.Fprintf(s.out, "%s: ok (%d %s, tools %s)\n", args[0], len(pc.Plan.Steps), pluralize(len(pc.Plan.Steps), "step", "steps"), strings.Join(pc.tools(), ", "))
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func newPlanRunCmd(s *streams) *cobra.Command {
	f := &planFlags{}
	cmd := &cobra.Command{
		Use:   "run PLAN.json",
		Short: "Validate a plan, then execute it and print the output of each step",
		Long: `Validate a plan as rein plan validate does and, only when it is valid, execute
it: each step once the steps it depends on (declared, or implied by a $ref)
have succeeded, independent steps in parallel, every call through the policy
gate of the rein.yaml's policy: (none: every call is allowed), whose
refusals are also written to stderr. The executor does not retry and does not replan: the first
failed step ends the run, and the steps that depend on it do not run.

Progress goes to stderr, one line per plan step event; the outputs by step id
go to stdout (--output json: {"status": "succeeded"|"failed", "outputs": {id:
output}, "error": {…}|null}; an invalid plan gives status "invalid" and its
problems).
Exit codes: 0 every step succeeded, 1 a step failed, 2 invalid plan or bad
usage (nothing ran), 130 interrupted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd.Context(), s, args[0]) },
	}
	f.register(cmd)
	return cmd
}

// planCheck is a plan read and checked against a rein.yaml's tools.
type planCheck struct {
	tb  *project.Toolbox
	cat *decide.Catalog
	// Checked holds the plan, and its problems when it did not parse or
	// validate (Cause: the classed error behind them).
	*decide.Checked
}

func (pc *planCheck) tools() []string { return pc.cat.Tools() }

// prepare checks the flags, loads the tools and reads, parses and
// validates the plan. Problems with the plan are returned in the
// planCheck; everything else (flags, the rein.yaml, an unreadable plan
// file) is a usage error.
func (f *planFlags) prepare(s *streams, path string) (*planCheck, error) {
	if err := checkFormat("--output", f.output); err != nil {
		return nil, err
	}
	if f.maxSteps < 1 {
		return nil, usageErr("--max-steps must be at least 1, not %d", f.maxSteps)
	}
	cfgPath, err := findConfig(f.config, filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	if cfgPath == "" {
		return nil, usageErr("no %s beside %s or in the current directory: pass --config FILE naming the rein.yaml whose tools the plan uses", project.ConfigFile, path)
	}
	tb, err := project.LoadConfig(cfgPath, nil)
	if err != nil {
		return nil, loadError(s, err)
	}
	pc := &planCheck{tb: tb}
	if pc.cat, err = decide.NewCatalog(tb, decide.PlanOptions{MaxSteps: f.maxSteps, Allowed: f.tools}); err != nil {
		return nil, usageErr("%v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErr("read plan: %v", err)
	}
	if pc.Checked, err = decide.CheckPlan(pc.cat, data); err != nil {
		return nil, usageErr("plan %s: %v", path, err)
	}
	return pc, nil
}

// findConfig returns the rein.yaml to use: flag when set, else the one in
// dir, else the one in the current directory, else "".
func findConfig(flag, dir string) (string, error) {
	if flag != "" {
		if _, err := os.Stat(flag); err != nil {
			return "", usageErr("--config: %v", err)
		}
		return flag, nil
	}
	for _, d := range []string{dir, "."} {
		p := filepath.Join(d, project.ConfigFile)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", nil
}

// planValidJSON is what rein plan validate --output json prints.
type planValidJSON struct {
	Valid    bool             `json:"valid"`
	Goal     string           `json:"goal,omitempty"`
	Steps    int              `json:"steps,omitempty"`
	Problems []decide.Problem `json:"problems"`
}

// reportInvalid prints a plan's problems and returns the usage exit.
func (f *planFlags) reportInvalid(s *streams, path string, probs []decide.Problem, cause error, running bool) error {
	if f.output == "json" {
		var err error
		if running {
			err = encodeJSON(s, planRunJSON{Status: "invalid", Outputs: map[string]any{}, Error: planErrorOf(cause), Problems: probs})
		} else {
			err = encodeJSON(s, planValidJSON{Problems: probs})
		}
		if err != nil {
			return err
		}
	} else {
		for _, p := range probs {
			if p.Pointer == "" {
				fmt.Fprintf(s.err, "%s: %s\n", path, p.Message)
			} else {
				fmt.Fprintf(s.err, "%s: %s: %s\n", path, p.Pointer, p.Message)
			}
		}
	}
	what := "the plan is invalid"
	if budget := fault.BudgetOf(cause); budget != "" {
		what = "the plan is over the " + budget + " budget"
	}
	return &exitError{code: exitUsage, err: fmt.Errorf("%s: %d %s, %s; nothing ran", path, len(probs), pluralize(len(probs), "problem", "problems"), what)}
}

// planRunJSON is what rein plan run --output json prints.
type planRunJSON struct {
	Status  string         `json:"status"`
	Goal    string         `json:"goal,omitempty"`
	Outputs map[string]any `json:"outputs"`
	// Steps are the plan's steps in order with what became of them.
	Steps    []planStepJSON   `json:"steps,omitempty"`
	Error    *planErrorJSON   `json:"error"`
	Problems []decide.Problem `json:"problems,omitempty"`
}

type planStepJSON struct {
	ID         string  `json:"id"`
	Tool       string  `json:"tool"`
	Status     string  `json:"status"` // succeeded, failed, not_run
	DurationMS float64 `json:"duration_ms"`
	Error      string  `json:"error,omitempty"`
}

// planErrorJSON is why a plan run did not succeed.
type planErrorJSON struct {
	Class   fault.Class `json:"class"`
	Budget  string      `json:"budget,omitempty"`
	Step    string      `json:"step,omitempty"`
	Tool    string      `json:"tool,omitempty"`
	Message string      `json:"message"`
}

func planErrorOf(err error) *planErrorJSON {
	if err == nil {
		return nil
	}
	e := &planErrorJSON{Class: fault.ClassOf(err), Budget: fault.BudgetOf(err), Message: err.Error()}
	var se *decide.StepError
	if errors.As(err, &se) {
		e.Step, e.Tool, e.Message = se.StepID, se.Tool, se.Err.Error()
		e.Class = fault.ClassOf(se.Err)
	}
	return e
}

func (f *planFlags) run(ctx context.Context, s *streams, path string) error {
	pc, err := f.prepare(s, path)
	if err != nil {
		return err
	}
	if pc.Problems != nil {
		return f.reportInvalid(s, path, pc.Problems, pc.Cause, true)
	}
	p := pc.Plan
	prog := &planProgress{w: s.err, start: time.Now(), steps: map[string]*planStepJSON{}}
	for i := range p.Steps {
		prog.steps[p.Steps[i].ID] = &planStepJSON{ID: p.Steps[i].ID, Tool: p.Steps[i].Tool, Status: "not_run"}
	}
	gate := safety.Gate(safety.AllowAll)
	if pc.tb.Config != nil && pc.tb.Config.Policy != nil {
		gate = pc.tb.Config.Policy.Policy() // rein.yaml policy: applies to a plan run too
	}
	log := &mcp.GateLog{W: s.err, Prefix: "rein plan run"}
	outputs, err := pc.Run(ctx, decide.RunOptions{Gate: gate, OnGate: log.Decided, OnEvent: prog.event})
	res := planRunJSON{Status: "succeeded", Goal: p.Goal, Outputs: outputs, Error: planErrorOf(err)}
	if err != nil {
		res.Status = "failed"
	}
	for i := range p.Steps {
		res.Steps = append(res.Steps, *prog.steps[p.Steps[i].ID])
	}
	if f.output == "json" {
		if werr := encodeJSON(s, res); werr != nil {
			return werr
		}
	} else {
		writePlanText(s.out, path, &res)
	}
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil || fault.ClassOf(err) == fault.Cancelled:
		return &exitError{code: exitInterrupted}
	}
	return &exitError{code: exitRunFailed}
}

// writePlanText prints a plan run's result: a status line, then each step
// in plan order with its output or error.
func writePlanText(w io.Writer, path string, res *planRunJSON) {
	fmt.Fprintf(w, "plan %s: %s\n", path, res.Status)
	for _, st := range res.Steps {
		detail := ""
		switch st.Status {
		case "succeeded":
			b, err := json.Marshal(res.Outputs[st.ID])
			if err != nil {
				b = []byte(fmt.Sprint(res.Outputs[st.ID]))
			}
			detail = string(b)
		case "failed":
			detail = st.Error
		}
		fmt.Fprintf(w, "  %-20s %-10s %s\n", st.ID, st.Status, detail)
	}
	if res.Error != nil {
		fmt.Fprintf(w, "error (%s", res.Error.Class)
		if res.Error.Budget != "" {
			fmt.Fprintf(w, ", budget %s", res.Error.Budget)
		}
		fmt.Fprintf(w, "): %s\n", res.Error.Message)
	}
}

// planProgress prints one stderr line per plan step event and keeps what
// became of each step.
type planProgress struct {
	w     io.Writer
	start time.Time
	mu    sync.Mutex
	steps map[string]*planStepJSON
}

func (pp *planProgress) event(e decide.PlanEvent) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	switch e.Kind {
	case decide.StepStarted, decide.StepSettled, decide.StepReused:
	default:
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%7.3fs %-18s %s tool=%s", time.Since(pp.start).Seconds(), e.Kind, e.PlanStep, e.Tool)
	if e.Kind == decide.StepSettled {
		fmt.Fprintf(&b, " %s %s", e.Status, roundDuration(e.Duration))
		if st := pp.steps[e.PlanStep]; st != nil {
			st.Status, st.DurationMS, st.Error = e.Status, float64(e.Duration)/float64(time.Millisecond), e.Error
		}
	}
	if e.ErrorClass != "" {
		fmt.Fprintf(&b, " [%s] %s", e.ErrorClass, runs.Clip(e.Error, 200))
	}
	fmt.Fprintln(pp.w, b.String())
}
