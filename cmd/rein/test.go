package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/flow/casegen"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/store"
)

type testFlags struct {
	loadFlags
	input, output, stub, only string
	list                      bool
	maxCases                  int
}

func newTestCmd(s *streams) *cobra.Command {
	f := &testFlags{}
	cmd := &cobra.Command{
		Use:   "test DIR",
		Short: "Generate test cases from a flow's schemas and run them against the flow, offline",
		Long: `Generate cases from the flow's inputs: schema and from each llm and tool
step's output_schema and each tool step's input_schema, run them, and report
what each did and which policies fired.

The cases of each schema: a minimal valid value (required fields only; the
flow input takes its values from input.json where it has them), the bounds
it allows (minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength,
maxLength, minItems, maxItems, enum members) and the values just past them,
each required field missing, each field of a wrong type, a string that
breaks its pattern, and a property additionalProperties: false refuses.
Names are stable: input/amount=maximum, input/-customer (missing),
step charge args/amount: wrong type. At most --max-cases per schema; the
rest are counted and said.

How a case runs, each as a run of its own in a throwaway store (a temporary
folder, removed afterwards):
  input/...        the run's input; every other step answers its minimal value
  step S output/.. step S's model (llm) or tool answers the case's value
  step S args/...  checked as a call is before its tool runs: the tool's
                   input_schema, then the gate (no run; no provenance)
Every model is answered with values generated from its step's
output_schema (no provider is called); route, plan and agent steps are
answered by the folder's script (script.yaml, or --script). Tools whose
effect is write, external or destructive are stubbed by default (--stub
effects): they answer values generated from their output_schema and their
program never runs. --stub all stubs read tools too; --stub none calls them
all (real side effects). A tool with effect none is never stubbed.

Expected: a valid case is accepted (the run succeeds, or stops where the gate
said so: an approval to wait for, a block); an invalid one is rejected with
an error that says where (at /pointer). A case whose step the run never
reached is skipped. An output case approves what its run waits for before
its step (as a person would), so it reaches the step; an input case's run is
left waiting: that is its outcome.
Exit codes: 0 every case behaved as expected, 1 some did not, 2 bad usage
or an invalid flow.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, s, args[0]) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.trustedToolsOnly, "trusted-tools-only", false, trustedToolsUsage)
	fl.StringVar(&f.script, "script", "", "script answering route, plan and agent steps (default: script.yaml in the flow's folder)")
	fl.StringVar(&f.config, "config", "", "rein.yaml to use (default: rein.yaml beside the flow)")
	fl.StringVar(&f.input, "input", "", "a valid run input (JSON file) whose fields the cases start from (default: input.json in the flow's folder)")
	fl.StringVar(&f.stub, "stub", stubEffects, "tools answered with generated values instead of being called: effects (write, external, destructive), all (read too), or none")
	fl.StringVar(&f.only, "case", "", "run only the case of this name")
	fl.BoolVar(&f.list, "list", false, "list the cases without running them")
	fl.IntVar(&f.maxCases, "max-cases", casegen.DefaultMaxCases, "the most cases one schema gets")
	addOutputFlag(cmd, &f.output)
	_ = cmd.RegisterFlagCompletionFunc("stub", fixedValues(stubEffects, stubAll, stubNone))
	return cmd
}

// testReport is what rein test -o json prints.
type testReport struct {
	Flow    string         `json:"flow"`
	Stubbed []string       `json:"stubbed"`
	Cases   []caseResult   `json:"cases"`
	Dropped map[string]int `json:"dropped,omitempty"`
	Summary map[string]int `json:"summary"`
}

func (f *testFlags) run(cmd *cobra.Command, s *streams, dir string) error {
	if err := checkFormat("--output", f.output); err != nil {
		return err
	}
	if !slices.Contains([]string{stubEffects, stubAll, stubNone}, f.stub) {
		return usageErr("--stub must be effects, all or none, not %q", f.stub)
	}
	if f.maxCases < 1 {
		return usageErr("--max-cases must be at least 1, not %d", f.maxCases)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	ctx := cmd.Context()
	// the cases' runs (and the tasks of the workflow tools an agent
	// declares) go to a store in a temporary folder, removed at the end.
	tmp, err := os.MkdirTemp("", "rein-test-")
	if err != nil {
		return fmt.Errorf("a folder for the test runs' store: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	lazy := &lazyStore{db: &dbFlag{dsn: filepath.Join(tmp, "test.db")}}
	defer lazy.close(s)
	f.workflow = lazy.workflows(ctx, f.trustedToolsOnly)
	// every model is answered from a: a flow whose models are not
	// configured loads too.
	a := &answers{}
	opts := f.loadOptions()
	opts.Fallback = a
	p, err := project.Load(dir, opts)
	if err != nil {
		return loadError(s, err)
	}
	s.use(p)
	for _, w := range p.Flow.Warnings {
		fmt.Fprintln(s.err, w.String())
	}
	defer func() {
		if cerr := p.Close(); cerr != nil {
			fmt.Fprintf(s.err, "rein: %v\n", cerr)
		}
	}()
	var base any
	if f.input != "" || p.InputPath != "" {
		if base, err = readInput(s, "", f.input, p.InputPath); err != nil {
			return err
		}
	}
	suite := buildSuite(p, base, f.maxCases)
	cases := suite.cases
	if f.only != "" {
		i := slices.IndexFunc(cases, func(c testCase) bool { return c.Name == f.only })
		if i < 0 {
			return usageErr("--case %q: the flow has no case of that name (rein test --list %s lists them)", f.only, shellQuote(dir))
		}
		cases = cases[i : i+1]
	}
	if f.list {
		return f.writeList(s, cases, suite)
	}
	a.suite = suite
	stubs, err := wireAnswers(p, a, f.stub)
	if err != nil {
		return err
	}
	st, err := lazy.open(ctx)
	if err != nil {
		return err
	}
	results, err := runCases(ctx, st, p, a, suite, cases)
	if err != nil {
		return err
	}
	rep := testReport{Flow: p.Flow.Name, Stubbed: stubs, Cases: results, Dropped: suite.dropped, Summary: map[string]int{}}
	if rep.Stubbed == nil {
		rep.Stubbed = []string{}
	}
	for _, r := range results {
		rep.Summary[r.Result]++
	}
	if f.output == "json" {
		if err := encodeJSON(s, rep); err != nil {
			return err
		}
	} else {
		writeTestReport(s, &rep)
	}
	if n := rep.Summary[resultUnexpected]; n > 0 {
		return &exitError{code: exitRunFailed, err: fmt.Errorf("%d of %d %s did not behave as expected", n, len(results), pluralize(len(results), "case", "cases"))}
	}
	return nil
}

// runCases runs cases one after another, each a run of its own in st.
func runCases(ctx context.Context, st store.Store, p *project.Project, a *answers, suite *suite, cases []testCase) ([]caseResult, error) {
	c, err := rein.Open(ctx, rein.Config{Store: st})
	if err != nil {
		return nil, err
	}
	reader, err := runs.New(st, nil)
	if err != nil {
		return nil, err
	}
	t := &tester{p: p, client: c, reader: reader, answers: a, suite: suite}
	out := make([]caseResult, 0, len(cases))
	for i := range cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out = append(out, t.run(ctx, &cases[i]))
	}
	return out, nil
}

func (f *testFlags) writeList(s *streams, cases []testCase, suite *suite) error {
	if f.output == "json" {
		type listed struct {
			Name    string `json:"name"`
			Pointer string `json:"pointer"`
			Expect  string `json:"expect"`
			Value   any    `json:"value"`
			Skip    string `json:"skip,omitempty"`
		}
		out := make([]listed, len(cases))
		for i, c := range cases {
			out[i] = listed{Name: c.Name, Pointer: c.Pointer, Expect: expectation(c.Valid), Value: c.Value, Skip: c.Skip}
		}
		return encodeJSON(s, map[string]any{"cases": out, "dropped": suite.dropped})
	}
	tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tEXPECT\tNOTE")
	for _, c := range cases {
		note := "-"
		if c.Skip != "" {
			note = "skipped: " + c.Skip
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, expectation(c.Valid), note)
	}
	_ = tw.Flush()
	writeDropped(s, suite.dropped)
	return nil
}

func writeDropped(s *streams, dropped map[string]int) {
	for _, k := range slices.Sorted(maps.Keys(dropped)) {
		fmt.Fprintf(s.out, "%s: %d more %s not made (--max-cases)\n", k, dropped[k], pluralize(dropped[k], "case", "cases"))
	}
}

func writeTestReport(s *streams, rep *testReport) {
	if len(rep.Stubbed) > 0 {
		fmt.Fprintf(s.out, "stubbed tools (answered with generated values, never called): %s\n", strings.Join(rep.Stubbed, ", "))
	}
	tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tEXPECT\tACTUAL\tRESULT\tPOLICIES")
	for _, r := range rep.Cases {
		pol := make([]string, len(r.Policies))
		for i, p := range r.Policies {
			pol[i] = p.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Expect, r.Actual, r.Result, orDash(strings.Join(pol, ", ")))
	}
	_ = tw.Flush()
	for _, r := range rep.Cases {
		if len(r.Approved) > 0 {
			fmt.Fprintf(s.out, "%s: approved %s to reach the step\n", r.Name, strings.Join(r.Approved, ", "))
		}
		if r.Why != "" {
			fmt.Fprintf(s.out, "%s: %s: %s\n", r.Name, r.Result, runs.Clip(r.Why, 200))
		}
		if r.Result == resultUnexpected && r.Error != "" {
			fmt.Fprintf(s.out, "%s: error: %s\n", r.Name, runs.Clip(r.Error, 200))
		}
	}
	writeDropped(s, rep.Dropped)
	fmt.Fprintf(s.out, "%d %s: %d ok, %d unexpected, %d skipped\n", len(rep.Cases), pluralize(len(rep.Cases), "case", "cases"),
		rep.Summary[resultOK], rep.Summary[resultUnexpected], rep.Summary[resultSkipped])
}
