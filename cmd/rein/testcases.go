package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/flow/casegen"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value/schema"
)

// Where a case puts its value (testCase.kind).
const (
	kindInput  = "input"  // the run's input
	kindOutput = "output" // a step's output: its model's reply or its tool's result
	kindArgs   = "args"   // a tool step's args, checked as a call is
)

// testCase is one case of rein test: a generated value and where it goes.
type testCase struct {
	casegen.Case
	kind string
	// step is the step an output or args case is about.
	step *flow.Step
	// spec is the tool an args case calls.
	spec tool.Spec
	// check validates an args case as the call does (the tool's
	// input_schema).
	check func(any) error
}

// suite is every case of a flow, with the values the steps a case is not
// about answer with.
type suite struct {
	cases []testCase
	// input is the valid run input of the cases about a step: input's
	// minimal case (or the folder's input.json, or {}).
	input any
	// outputs are each step's minimal output, by step id; problems say
	// why a step has none (its schema defeats the generator).
	outputs  map[string]any
	problems map[string]string
	// dropped counts the cases past --max-cases, by schema.
	dropped map[string]int
}

// buildSuite generates the cases of p's flow: its inputs, then, step by
// step in file order, each llm or tool step's output and each tool
// step's args. base is the folder's input (nil: none).
func buildSuite(p *project.Project, base any, maxCases int) *suite {
	s := &suite{input: base, outputs: map[string]any{}, problems: map[string]string{}, dropped: map[string]int{}}
	if s.input == nil {
		s.input = map[string]any{}
	}
	if in := p.Flow.Inputs; in != nil {
		if cs := s.generate("input", in.Doc, base, in.Validate, maxCases); len(cs) > 0 {
			if cs[0].Skip == "" {
				s.input = cs[0].Value
			}
			s.add(kindInput, nil, cs)
		}
	} else {
		s.add(kindInput, nil, []casegen.Case{{Name: "input/given", Value: s.input, Valid: true}})
	}
	for _, st := range p.Flow.Steps {
		if st.Type != flow.LLM && st.Type != flow.Tool {
			continue
		}
		if st.OutputSchema != nil {
			cs := s.generate("step "+st.ID+" output", st.OutputSchema.Doc, nil, st.OutputSchema.Validate, maxCases)
			if len(cs) > 0 && cs[0].Skip == "" {
				s.outputs[st.ID] = cs[0].Value
			} else {
				s.problems[st.ID] = "rein test could not make an output its output_schema accepts"
			}
			s.add(kindOutput, st, cs)
		}
		if st.Type != flow.Tool {
			continue
		}
		t, ok := p.Tools.Lookup(st.Tool)
		if !ok || len(t.Spec().InputSchema) == 0 {
			continue
		}
		spec := t.Spec()
		sch, err := schema.Compile("tool "+spec.Name+" input_schema", spec.InputSchema)
		if err != nil {
			s.add(kindArgs, st, []casegen.Case{{Name: "step " + st.ID + " args/minimal", Skip: err.Error()}})
			continue
		}
		cs := s.generate("step "+st.ID+" args", sch.Doc, nil, sch.Validate, maxCases)
		for _, c := range cs {
			s.cases = append(s.cases, testCase{Case: c, kind: kindArgs, step: st, spec: spec, check: sch.Validate})
		}
	}
	return s
}

// generate makes one schema's cases; a schema the generator cannot
// satisfy gets one skipped minimal case saying so.
func (s *suite) generate(prefix string, doc, base any, check func(any) error, maxCases int) []casegen.Case {
	res, err := casegen.Generate(doc, casegen.Options{Prefix: prefix, Base: base, Check: check, MaxCases: maxCases})
	if err != nil {
		return []casegen.Case{{Name: prefix + "/minimal", Skip: err.Error()}}
	}
	if res.Dropped > 0 {
		s.dropped[prefix] = res.Dropped
	}
	return res.Cases
}

func (s *suite) add(kind string, st *flow.Step, cs []casegen.Case) {
	for _, c := range cs {
		s.cases = append(s.cases, testCase{Case: c, kind: kind, step: st})
	}
}

// answers is what the models and the stubbed tools of a test run answer:
// each step its minimal output, except the step of the case being run,
// which answers the case's value. Cases run one at a time; set is called
// between runs.
type answers struct {
	mu      sync.Mutex
	suite   *suite
	current *testCase
	// scriptPath is the folder's script, which answers route, plan and
	// agent requests (fallback: loaded for each case).
	scriptPath string
	fallback   model.Model
}

// set makes c the case being run (nil: none), with the folder's script
// loaded afresh: each case's run uses its replies from the first.
func (a *answers) set(c *testCase) error {
	var script model.Model
	if a.scriptPath != "" && c != nil {
		m, err := scripted.Load(a.scriptPath)
		if err != nil {
			return err
		}
		script = m
	}
	a.mu.Lock()
	a.current, a.fallback = c, script
	a.mu.Unlock()
	return nil
}

func (a *answers) currentCase() *testCase {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.current
}

// output is what step answers with: the case's value when the case is
// about that step's output, else the step's minimal output.
func (a *answers) output(step string) (any, bool, error) {
	if c := a.currentCase(); c != nil && c.kind == kindOutput && c.step.ID == step {
		return c.Value, true, nil
	}
	if v, ok := a.suite.outputs[step]; ok {
		return v, true, nil
	}
	if why, ok := a.suite.problems[step]; ok {
		return nil, false, fault.BusinessErr(fmt.Errorf("step %s: %s; give its output_schema a const, enum, default or examples value", step, why))
	}
	return nil, false, nil
}

// Generate answers an llm step's request (a corrective one too) with the
// step's value as JSON, or a short text for a step without an
// output_schema; route, plan and agent requests go to the folder's
// script, and without one they fail saying so.
func (a *answers) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if req.Decision != "" {
		a.mu.Lock()
		script := a.fallback
		a.mu.Unlock()
		if script != nil {
			return script.Generate(ctx, req)
		}
		return nil, fault.BusinessErr(fmt.Errorf("rein test answers llm steps only; step %s asks for a %s decision: give a script (script.yaml beside the flow, or --script FILE) that answers it", req.StepID, req.Decision))
	}
	v, ok, err := a.output(req.StepID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return &model.Response{Text: "rein test: a generated reply"}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fault.BusinessErr(err)
	}
	return &model.Response{Text: string(b)}, nil
}

// testTool is a tool of a test run. The step whose output the case is
// about gets the case's value; a stubbed tool answers every other step
// with that step's minimal output instead of calling the tool; a tool
// that is not stubbed is called. The spec (effect, schemas, tags) stays
// the tool's, so the gate and the checks see the same tool.
type testTool struct {
	tool.Tool
	stub    bool
	answers *answers
}

func (t *testTool) Call(ctx context.Context, args any) (any, error) {
	step := tool.CallInfoFrom(ctx).StepID
	if c := t.answers.currentCase(); c != nil && c.kind == kindOutput && c.step.ID == step {
		return c.Value, nil
	}
	if !t.stub {
		return t.Tool.Call(ctx, args)
	}
	v, ok, err := t.answers.output(step)
	if err != nil || ok {
		return v, err
	}
	return map[string]any{}, nil
}

// Which tools a test run stubs (--stub).
const (
	stubEffects = "effects" // tools whose effect is not none or read
	stubAll     = "all"
	stubNone    = "none"
)

// stubbed reports whether mode stubs a tool of that spec. A tool with
// effect none is never stubbed: it has no effect to keep from happening,
// and sub-agents and handoffs (effect none) must stay what they are.
func stubbed(mode string, spec tool.Spec) bool {
	switch {
	case mode == stubNone || spec.Effect == tool.EffectNone:
		return false
	case mode == stubAll:
		return true
	}
	return spec.Effect != tool.EffectRead
}

// wireAnswers makes p's models answer from a, and wraps in a testTool
// each tool mode stubs and each tool of a tool step with output cases (the
// others stay as they are: an agent's sub-agents must). It returns the
// stubbed tools' names.
func wireAnswers(p *project.Project, a *answers, mode string) ([]string, error) {
	stepTools := map[string]bool{}
	for _, c := range a.suite.cases {
		if c.kind == kindOutput && c.step.Type == flow.Tool {
			stepTools[c.step.Tool] = true
		}
	}
	a.scriptPath = p.ScriptPath
	models := &model.Registry{}
	for _, n := range p.Models.Names() {
		models.Register(n, a)
	}
	models.SetFallback(a)
	p.Models = models
	tools := &tool.Registry{}
	var stubs []string
	for _, n := range p.Tools.Names() {
		t, _ := p.Tools.Lookup(n)
		stub := stubbed(mode, t.Spec())
		if stub {
			stubs = append(stubs, n)
		}
		if stub || stepTools[n] {
			t = &testTool{Tool: t, stub: stub, answers: a}
		}
		if err := tools.Register(t); err != nil {
			return nil, err
		}
	}
	p.Tools = tools
	return stubs, nil
}
