package flow

import (
	"fmt"
	"regexp"

	"github.com/goccy/go-yaml/ast"

	"github.com/reinhq/rein/internal/yamlnode"
)

var (
	flowFields = []string{"name", "id", "version", "description", "schema", "enabled", "idempotency",
		"max_iterations", "max_input_bytes", "budgets", "inputs", "schemas", "tools", "steps", "concurrency", "retention", "deliverables", "policy", "risk", "review", "on_failure"}
	stepFields = []string{"id", "type", "description", "requires", "when", "retries", "backoff", "timeout",
		"on_error", "fallback_value", "fallback", "mandatory", "output_schema", "model", "prompt_template",
		"tool", "args", "for_each", "concurrency", "repeat", "gate", "max_output_bytes", "max_input_bytes", "skill", "adapter", "approval", "message",
		"text", "routes", "fallback_route", "goal", "tools", "max_steps", "max_replans", "max_executed_steps",
		"instructions", "budgets", "max_observation_bytes", "max_args_bytes", "execute_plan", "handoffs", "context", "guardrails", "premise"}
	budgetFields   = []string{"max_llm_calls", "max_tokens", "timeout"}
	backoffFields  = []string{"initial", "max", "multiplier"}
	repeatFields   = []string{"until", "max"}
	fallbackFields = []string{"value", "tool", "args", "model", "prompt_template"}

	idPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
)

// reservedNames cannot be step ids: they are namespaces in templates and
// expressions.
var reservedNames = map[string]bool{"input": true, "steps": true, "item": true, "index": true,
	"previous": true, "iteration": true, "output": true}

// decoder holds the state of one Parse.
type decoder struct {
	diags diagnostics
	flow  *Flow
	srcs  []*stepSrc
	opts  *Options
	// schema plumbing
	schemaNodes map[string]field
	schemas     *schemaSet
	toolNodes   field
	hasTools    bool
	// agentTool is set while an agent.yaml's exec tool is decoded: its
	// approval: is the agent's, not an unknown field.
	agentTool bool
	// upstream holds each step's transitive upstream steps as a bitset,
	// by step index, once isUpstream needed them.
	upstream   [][]uint64
	inputsNode ast.Node
	// deliverablePos locates each id of the flow's deliverables:.
	deliverablePos []Pos
}

// stepSrc keeps the nodes of one step for located messages in later passes.
type stepSrc struct {
	step        *Step
	node        ast.Node
	fields      map[string]field
	requiresSet bool
	requiresPos []Pos
	argsNode    ast.Node
}

func (d *decoder) decodeFlow(root ast.Node) {
	fields, ok := fieldsOf(root)
	if !ok {
		d.diags.add(posOf(root), "", "a flow file must be a mapping with steps:, not %s", yamlnode.Kind(root))
		return
	}
	f := d.flow
	f.Enabled = true
	f.MaxIterations = DefaultMaxIterations
	f.Concurrency = DefaultConcurrency
	f.MaxInputBytes = DefaultMaxInputBytes
	var stepsNode ast.Node
	seen := map[string]bool{}
	for _, fl := range fields {
		if seen[fl.key] {
			d.diags.add(fl.keyPos, "", "duplicate field %q", fl.key)
			continue
		}
		seen[fl.key] = true
		switch fl.key {
		case "name":
			f.Name = d.name(fl, "")
		case "id":
			f.ID = d.name(fl, "")
		case "version":
			f.Version = d.name(fl, "")
		case "description":
			d.str(fl, "")
		case "schema":
			f.Format, _ = d.str(fl, "")
		case "enabled":
			f.Enabled, _ = d.boolean(fl, "")
		case "deliverables":
			if ids, pos, ok := d.strList(fl, ""); ok {
				f.Deliverables, d.deliverablePos = ids, pos
			}
		case "idempotency":
			if s, ok := d.str(fl, ""); ok {
				switch s {
				case "input_hash", "session_workflow_input_hash", "none":
					f.Idempotency = s
				default:
					d.diags.add(posOf(fl.value), "", "idempotency must be input_hash, session_workflow_input_hash or none, not %q", s)
				}
			}
		case "max_iterations":
			if n, ok := d.integer(fl, ""); ok {
				if n < 1 || n > 1_000_000 {
					d.diags.add(posOf(fl.value), "", "max_iterations must be between 1 and 1000000, not %d", n)
				} else {
					f.MaxIterations = n
				}
			}
		case "concurrency":
			if n, ok := d.integer(fl, ""); ok {
				if n < 1 || n > 1024 {
					d.diags.add(posOf(fl.value), "", "concurrency must be between 1 and 1024, not %d", n)
				} else {
					f.Concurrency = n
				}
			}
		case "max_input_bytes":
			if n, ok := d.integer(fl, ""); ok {
				if n < 1 {
					d.diags.add(posOf(fl.value), "", "max_input_bytes must be positive")
				} else {
					f.MaxInputBytes = int64(n)
				}
			}
		case "budgets":
			d.decodeBudgets(fl)
		case "inputs":
			d.inputsNode = fl.value
		case "schemas":
			sf, ok := fieldsOf(fl.value)
			if !ok {
				d.diags.add(posOf(fl.value), "", "schemas must map names to JSON Schemas, not %s", yamlnode.Kind(fl.value))
				continue
			}
			for _, s := range sf {
				if msg := yamlnode.NameProblem(s.key); msg != "" {
					d.diags.add(s.keyPos, "", "schema name %q %s: write plain text", s.key, msg)
					continue
				}
				d.schemaNodes[s.key] = s
			}
		case "tools":
			d.toolNodes, d.hasTools = fl, true
		case "retention":
			if t, ok := d.duration(fl, ""); ok {
				if t <= 0 {
					d.diags.add(posOf(fl.value), "", "retention must be positive, like 30d or 720h")
				} else {
					f.Retention = t
				}
			}
		case "policy":
			f.Policy = d.decodePolicy(fl)
		case "risk":
			f.Risk = d.decodeRisk(fl)
		case "review":
			f.Review = d.decodeReview(fl)
		case "on_failure":
			if s, ok := d.str(fl, ""); ok {
				switch OnFailure(s) {
				case OnFailureCompensate, OnFailureNone:
					f.OnFailure = OnFailure(s)
				default:
					d.diags.add(posOf(fl.value), "", "on_failure must be compensate (take back the run's effects in reverse order when it fails) or none, not %q", s)
				}
			}
		case "steps":
			stepsNode = fl.value
		default:
			d.unknownField(fl, "", "the flow", flowFields)
		}
	}
	if f.Name == "" {
		f.Name = f.ID
	}
	if f.Name == "" {
		d.diags.add(posOf(root), "", "the flow needs a name: (or an id:)")
	}
	seq, ok := stepsNode.(*ast.SequenceNode)
	switch {
	case stepsNode == nil || isNull(stepsNode):
		d.diags.add(posOf(root), "", "the flow has no steps: add a steps: list")
	case !ok:
		d.diags.add(posOf(stepsNode), "", "steps must be a list, not %s", yamlnode.Kind(stepsNode))
	default:
		if len(seq.Values) == 0 {
			d.diags.add(posOf(stepsNode), "", "steps is empty: a flow needs at least one step")
		}
		if len(seq.Values) > MaxSteps {
			d.diags.add(posOf(seq.Values[MaxSteps]), "", "the flow has %d steps, more than the %d a flow may have: split the work into several flows", len(seq.Values), MaxSteps)
			return
		}
		for i, n := range seq.Values {
			d.decodeStep(n, i)
		}
	}
}

func (d *decoder) decodeBudgets(fl field) {
	fields, ok := fieldsOf(fl.value)
	if !ok {
		d.diags.add(posOf(fl.value), "", "budgets must be a mapping, not %s", yamlnode.Kind(fl.value))
		return
	}
	b := &d.flow.Budgets
	for _, f := range fields {
		switch f.key {
		case "max_llm_calls", "max_tokens":
			n, ok := d.integer(f, "")
			if !ok {
				continue
			}
			if n < 1 {
				d.diags.add(posOf(f.value), "", "budgets.%s must be at least 1, not %d", f.key, n)
				continue
			}
			if f.key == "max_llm_calls" {
				b.MaxLLMCalls = n
			} else {
				b.MaxTokens = n
			}
		case "timeout":
			if t, ok := d.duration(f, ""); ok {
				if t <= 0 {
					d.diags.add(posOf(f.value), "", "budgets.timeout must be positive")
				} else {
					b.Timeout = t
				}
			}
		default:
			d.unknownField(f, "", "budgets", budgetFields)
		}
	}
}

func (d *decoder) decodeStep(n ast.Node, index int) {
	fields, ok := fieldsOf(n)
	if !ok {
		d.diags.add(posOf(n), "", "step %d must be a mapping with an id:, not %s", index+1, yamlnode.Kind(n))
		return
	}
	// Index is the position in Flow.Steps, which skips entries that are not
	// mappings; index (the position in the YAML list) only labels messages.
	s := &Step{Index: len(d.flow.Steps), Pos: posOf(n), OnError: Raise, MaxOutputBytes: DefaultMaxOutputBytes, MaxInputBytes: d.flow.MaxInputBytes,
		Backoff: Backoff{Initial: DefaultBackoffInitial, Max: DefaultBackoffMax, Multiplier: DefaultBackoffFactor}}
	src := &stepSrc{step: s, node: n, fields: map[string]field{}}
	for _, f := range fields {
		if _, dup := src.fields[f.key]; dup {
			d.diags.add(f.keyPos, "", "duplicate field %q", f.key)
			continue
		}
		src.fields[f.key] = f
		if f.key == "id" {
			s.ID, _ = d.str(f, "")
		}
	}
	label := s.ID
	if s.ID == "" {
		label = fmt.Sprintf("#%d", index+1)
		if _, has := src.fields["id"]; !has {
			d.diags.add(posOf(n), "", "step %d has no id", index+1)
		}
	} else if !idPattern.MatchString(s.ID) {
		d.diags.add(posOf(src.fields["id"].value), s.ID, "id must start with a letter or _ and hold only letters, digits, _ and -")
	} else if reservedNames[s.ID] {
		d.diags.add(posOf(src.fields["id"].value), s.ID, "id %q is reserved (input, steps, item, index, previous, iteration and output are names in templates)", s.ID)
	}
	for _, f := range fields {
		d.decodeStepField(s, src, f, label)
	}
	d.inferType(s, src, label)
	d.flow.Steps = append(d.flow.Steps, s)
	d.srcs = append(d.srcs, src)
}

// declaredType is the step's type: as written, before it is decoded.
func declaredType(src *stepSrc) Type {
	if f, ok := src.fields["type"]; ok {
		if n, ok := f.value.(*ast.StringNode); ok {
			return Type(n.Value)
		}
	}
	return ""
}

func (d *decoder) decodeStepField(s *Step, src *stepSrc, f field, label string) {
	switch f.key {
	case "id", "description":
		if f.key == "description" {
			d.str(f, label)
		}
	case "type":
		if t, ok := d.str(f, label); ok {
			s.Type = Type(t)
		}
	case "requires":
		if ids, pos, ok := d.strList(f, label); ok {
			s.Requires, src.requiresPos, src.requiresSet = ids, pos, true
		}
	case "when":
		s.When = d.expr(f, label)
	case "gate":
		s.Gate = d.expr(f, label)
	case "premise":
		s.Premise = d.decodePremise(f, label, "")
	case "retries":
		if n, ok := d.integer(f, label); ok {
			if n < 0 || n > MaxRetries {
				d.diags.add(posOf(f.value), label, "retries must be between 0 and %d, not %d", MaxRetries, n)
			} else {
				s.Retries = n
			}
		}
	case "backoff":
		d.decodeBackoff(s, f, label)
	case "timeout":
		if t, ok := d.duration(f, label); ok {
			if t <= 0 {
				d.diags.add(posOf(f.value), label, "timeout must be positive")
			} else {
				s.Timeout = t
			}
		}
	case "on_error":
		if v, ok := d.str(f, label); ok {
			switch OnError(v) {
			case Raise, Skip, Fallback, Retry, Escalate:
				s.OnError = OnError(v)
			default:
				d.diags.add(posOf(f.value), label, "on_error must be raise, skip, fallback, retry or escalate, not %q%s", v,
					didYouMean(v, []string{"raise", "skip", "fallback", "retry", "escalate"}))
			}
		}
	case "fallback_value":
		v, err := toValue(f.value)
		if err != nil {
			d.posErr(err, label)
		} else {
			s.FallbackValue, s.HasFallbackValue = v, true
		}
	case "fallback":
		d.decodeFallback(s, f, label)
	case "mandatory":
		s.Mandatory, _ = d.boolean(f, label)
	case "output_schema", "model", "skill", "adapter", "tool":
		// resolved in later passes; type-check now.
		if f.key == "output_schema" {
			return
		}
		if v, ok := d.str(f, label); ok {
			switch f.key {
			case "model":
				s.Model = v
			case "skill":
				s.Skill = v
			case "adapter":
				s.Adapter = v
			case "tool":
				s.Tool = v
			}
		}
	case "prompt_template":
		if v, ok := d.str(f, label); ok {
			s.Prompt = d.template(f.value, v, label, "prompt_template")
		}
	case "args":
		src.argsNode = f.value
		s.Args = d.args(f.value, label, "args")
	case "for_each":
		s.ForEach = &ForEach{Items: d.expr(f, label), Concurrency: DefaultForEachLimit}
	case "concurrency":
		if n, ok := d.integer(f, label); ok {
			if n < 1 || n > 1024 {
				d.diags.add(posOf(f.value), label, "concurrency must be between 1 and 1024, not %d", n)
			} else if s.ForEach != nil {
				s.ForEach.Concurrency = n
			}
		}
	case "repeat":
		d.decodeRepeat(s, f, label)
	case "approval":
		if v, ok := d.str(f, label); ok {
			switch v {
			case "required":
				s.ApprovalRequired = true
			case "none":
			default:
				d.diags.add(posOf(f.value), label, "approval must be required or none, not %q", v)
			}
		}
	case "message":
		if v, ok := d.str(f, label); ok {
			s.Message = d.template(f.value, v, label, "message")
		}
	case "text":
		if v, ok := d.str(f, label); ok {
			d.routeSpec(s).Text = d.template(f.value, v, label, "text")
		}
	case "routes":
		d.decodeRoutes(s, f, label)
	case "fallback_route":
		d.routeSpec(s).Fallback, _ = d.str(f, label)
	case "goal":
		if v, ok := d.str(f, label); ok {
			d.planSpec(s).Goal = d.template(f.value, v, label, "goal")
		}
	case "tools":
		if _, isMap := fieldsOf(f.value); isMap || declaredType(src) == Agent {
			// an agent step's tools, as agent.yaml writes them.
			d.agentSpec(s).Tools = d.decodeAgentTools(f, d.flow.Dir)
		} else if ids, _, ok := d.strList(f, label); ok {
			d.planSpec(s).Tools = ids
		}
	case "instructions":
		if v, ok := d.str(f, label); ok {
			d.agentSpec(s).Instructions = v
		}
	case "budgets":
		d.agentSpec(s).Budgets = d.decodeAgentBudgets(f)
	case "execute_plan":
		d.agentSpec(s).ExecutePlan = d.decodeAgentPlan(f, label)
	case "handoffs":
		d.agentSpec(s).Handoffs = d.decodeHandoffs(f, d.flow.Dir, label)
	case "context":
		d.agentSpec(s).Context = d.decodeAgentContext(f, label)
	case "guardrails":
		if declaredType(src) == LLM {
			s.Guardrails = d.decodeGuardrails(f, label)
			break
		}
		d.agentSpec(s).Guardrails = d.decodeGuardrails(f, label)
	case "max_observation_bytes", "max_args_bytes":
		if n, ok := d.integer(f, label); ok {
			if n < 1 {
				d.diags.add(posOf(f.value), label, "%s must be at least 1", f.key)
			}
			if f.key == "max_args_bytes" {
				d.agentSpec(s).MaxArgsBytes = n
			} else {
				d.agentSpec(s).MaxObservationBytes = n
			}
		}
	case "max_steps", "max_replans", "max_executed_steps":
		if n, ok := d.integer(f, label); ok {
			lo := 1
			if f.key == "max_replans" {
				lo = 0
			}
			if n < lo || n > 1000 {
				d.diags.add(posOf(f.value), label, "%s must be between %d and 1000, not %d", f.key, lo, n)
				break
			}
			ps := d.planSpec(s)
			switch f.key {
			case "max_steps":
				ps.MaxSteps = n
			case "max_replans":
				ps.MaxReplans = n
			default:
				ps.MaxExecuted = n
			}
		}
	case "max_output_bytes":
		if n, ok := d.integer(f, label); ok {
			if n < 1 {
				d.diags.add(posOf(f.value), label, "max_output_bytes must be positive")
			} else {
				s.MaxOutputBytes = int64(n)
			}
		}
	case "max_input_bytes":
		if n, ok := d.integer(f, label); ok {
			if n < 1 {
				d.diags.add(posOf(f.value), label, "max_input_bytes must be positive")
			} else {
				s.MaxInputBytes = int64(n)
			}
		}
	default:
		d.unknownField(f, label, "step", stepFields)
	}
}

func (d *decoder) inferType(s *Step, src *stepSrc, label string) {
	if s.ForEach != nil {
		if f, ok := src.fields["concurrency"]; ok {
			if n, ok := d.integerQuiet(f); ok && n >= 1 && n <= 1024 {
				s.ForEach.Concurrency = n
			}
		}
	} else if f, ok := src.fields["concurrency"]; ok && s.Type != Agent {
		d.diags.add(f.keyPos, label, "concurrency on a step bounds its for_each fan-out: add for_each or remove it (the flow-level concurrency bounds parallel steps)")
	}
	if s.Type == "" {
		switch {
		case s.Adapter != "":
			s.Type = Source
		case s.Skill != "":
			s.Type = Submit
		case s.Tool != "":
			s.Type = Tool
		case s.Prompt != nil || s.Model != "":
			s.Type = LLM
		}
	}
	pos := posOf(src.node)
	if f, ok := src.fields["type"]; ok {
		pos = posOf(f.value)
	}
	switch s.Type {
	case LLM, Tool, Approval, Route, Plan, Agent, Submit, Source:
	case "":
		d.diags.add(pos, label, "the step needs a type: (llm, tool, approval, route, plan, agent, submit or source), or a tool:, prompt_template:, skill: or adapter: to infer it from")
	case SubFlow:
		d.diags.add(pos, label, "type %s is not supported yet: sub-flow steps arrive in a later release", s.Type)
	default:
		d.diags.add(pos, label, "unknown type %q: use llm, tool, approval, route, plan, agent, submit or source%s", s.Type,
			didYouMean(string(s.Type), []string{"llm", "tool", "submit", "source", "route", "plan", "approval", "agent", "flow"}))
	}
	switch s.Type {
	case LLM:
		if _, has := src.fields["prompt_template"]; !has {
			d.diags.add(pos, label, "an llm step needs a prompt_template")
		}
		if s.Tool != "" {
			d.diags.add(src.fields["tool"].keyPos, label, "an llm step has no tool: (did you mean type: tool?)")
		}
		if s.Args != nil {
			d.diags.add(src.fields["args"].keyPos, label, "args belong to tool steps; an llm step reads its prompt_template")
		}
	case Tool:
		if s.Tool == "" {
			d.diags.add(pos, label, "a tool step needs tool: NAME")
		}
		if _, hasPrompt := src.fields["prompt_template"]; hasPrompt || s.Model != "" {
			key := "prompt_template"
			if _, ok := src.fields[key]; !ok {
				key = "model"
			}
			d.diags.add(src.fields[key].keyPos, label, "%s belongs to llm steps, not tool steps", key)
		}
	case Route, Plan:
		for _, k := range []string{"tool", "prompt_template", "args", "for_each", "repeat", "approval"} {
			if f, ok := src.fields[k]; ok {
				d.diags.add(f.keyPos, label, "%s does not belong to a %s step", k, s.Type)
			}
		}
	case Agent:
		d.checkAgentStep(s, src, pos, label)
	case Approval:
		for _, k := range []string{"tool", "prompt_template", "model", "args", "for_each", "repeat", "approval"} {
			if f, ok := src.fields[k]; ok {
				d.diags.add(f.keyPos, label, "an approval step waits for a person; %s does not belong to it", k)
			}
		}
	case Submit, Source:
		d.checkSubmission(s, src, pos, label)
	}
	if f, ok := src.fields["adapter"]; ok && s.Type != Source {
		d.diags.add(f.keyPos, label, "adapter: belongs to source steps (type: source)")
	}
	if s.ApprovalRequired && s.Type != Tool {
		d.diags.add(src.fields["approval"].keyPos, label, "approval: required belongs to tool steps (use type: approval for a step that only asks a person)")
	}
	if _, ok := src.fields["message"]; ok && s.Type != Approval && !s.ApprovalRequired {
		d.diags.add(src.fields["message"].keyPos, label, "message is what an approval asks: it belongs to type: approval steps and approval: required tool steps")
	}
	for _, k := range []string{"text", "routes", "fallback_route"} {
		if f, ok := src.fields[k]; ok && s.Type != Route {
			d.diags.add(f.keyPos, label, "%s belongs to route steps (type: route)", k)
		}
	}
	for _, k := range []string{"goal", "tools", "max_steps", "max_replans", "max_executed_steps"} {
		if f, ok := src.fields[k]; ok && s.Type != Plan && !(k == "tools" && s.Type == Agent) {
			d.diags.add(f.keyPos, label, "%s belongs to plan steps (type: plan)", k)
		}
	}
	if f, ok := src.fields["tools"]; ok && s.Type == Plan && s.Agent != nil {
		d.diags.add(posOf(f.value), label, "a plan step's tools: is a list of tool names")
	}
	if f, ok := src.fields["guardrails"]; ok && s.Type != Agent && s.Type != LLM {
		d.diags.add(f.keyPos, label, "guardrails belongs to agent and llm steps (type: agent, type: llm)")
	}
	for _, k := range []string{"instructions", "budgets", "max_observation_bytes", "max_args_bytes", "execute_plan", "handoffs", "context"} {
		if f, ok := src.fields[k]; ok && s.Type != Agent {
			d.diags.add(f.keyPos, label, "%s belongs to agent steps (type: agent)", k)
		}
	}
	if s.ForEach != nil && s.Repeat != nil {
		d.diags.add(src.fields["repeat"].keyPos, label, "a step has for_each or repeat, not both: put the loop in a step of its own")
	}
	if s.ForEach != nil || s.Repeat != nil {
		for _, g := range s.Guardrails {
			if g.Ask {
				d.diags.add(g.Pos, label, "guardrail %s: on_trip: ask waits for a person on a plain llm step, not under for_each or repeat; stop the step (on_trip: stop) or move the loop to a step of its own", g.Name)
			}
		}
	}
	if s.Mandatory && s.OnError == Skip {
		d.diags.add(posOf(src.fields["on_error"].value), label, "on_error: skip is not allowed on a mandatory step (use fallback, retry or raise)")
	}
}
