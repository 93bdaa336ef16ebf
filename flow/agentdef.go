package flow

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/reinhq/rein/internal/yamlnode"
)

// AgentFile is the file that defines an agent in its folder.
const AgentFile = "agent.yaml"

var (
	agentFields        = []string{"name", "description", "model", "instructions", "tools", "budgets", "output_schema", "max_observation_bytes", "max_args_bytes", "concurrency", "execute_plan", "retries", "backoff", "handoffs", "context", "guardrails", "review"}
	handoffFields      = []string{"agent", "history"}
	agentContextFields = []string{"max_tokens", "strategy", "prompt"}
	agentPlanFields    = []string{"enabled", "max_steps", "allow_external"}
	agentBudgetFields  = []string{"max_turns", "max_tool_calls", "max_tokens", "max_handoffs", "timeout"}
)

// AgentDef is an agent.yaml: the model, instructions, tools, budgets and
// output schema of an agent (package agent runs it).
type AgentDef struct {
	File string
	Name string
	// Description says what the agent is for.
	Description string
	// Model is the model name: a rein.yaml models: name, provider/model,
	// or any name a script answers.
	Model        string
	ModelPos     Pos
	Instructions string
	// Tools are the tools the agent may call, in file order.
	Tools   []*AgentTool
	Budgets AgentBudgets
	// Review is agent.yaml review: (agent folders only): the reviewer of
	// the agent's runs, which replaces rein.yaml's, as a flow's does.
	Review *ReviewDecl
	// MaxObservationBytes is the largest observation kept whole in the
	// transcript (0: the agent package's default).
	MaxObservationBytes int
	// MaxArgsBytes bounds a call's arguments as the model wrote them (0:
	// the agent package's default, 1 MiB): longer ones are an invalid call
	// the model sees.
	MaxArgsBytes int
	// Concurrency bounds the calls of one turn that run at once (0: the
	// default).
	Concurrency int
	// OutputSchema, when set, is the schema the final answer must satisfy.
	OutputSchema *Schema
	// ExecutePlan configures the execute_plan meta-tool, offered unless
	// disabled.
	ExecutePlan AgentPlan
	// Handoffs are the agents the conversation may be transferred to
	// (handoffs:), each offered to the model as transfer_to_<name>.
	Handoffs []*Handoff
	// Context is the context budget of each model request (context:); a
	// zero MaxTokens means none.
	Context AgentContext
	// Guardrails check the task (input) and the final answer (output).
	Guardrails []*AgentGuardrail
}

// AgentContext is an agent's context: the most tokens one model request
// may send (as rein estimates them) and how older turns are compacted to
// stay within it: "trim" (left out, oldest first, a tool call with its
// observation) or "summarize" (replaced by a model's summary, asked with
// Prompt).
type AgentContext struct {
	MaxTokens int
	Strategy  string
	Prompt    string
}

// Handoff is one entry of handoffs:: an agent folder, and what of the
// conversation the receiving agent sees.
type Handoff struct {
	// Name is the folder's base name: the model sees transfer_to_<Name>.
	Name string
	// Agent is the agent folder (absolute, or relative to the working
	// directory when the declaring file's was).
	Agent string
	// History is what the receiving agent sees: HistoryAll (the
	// default), HistoryNoTools or HistoryLastUser.
	History string
	Pos     Pos
}

// What a handoff passes to the receiving agent.
const (
	// HistoryAll: the whole conversation, tool calls and their results too.
	HistoryAll = "all"
	// HistoryNoTools: the messages without the tool calls and results.
	HistoryNoTools = "no_tools"
	// HistoryLastUser: only the user's last message (the task).
	HistoryLastUser = "last_user"
)

// AgentPlan is an agent's execute_plan: (false, or a mapping of enabled,
// max_steps, allow_external).
type AgentPlan struct {
	// Disabled (execute_plan: false, or enabled: false) withholds the tool.
	Disabled bool
	// MaxSteps bounds a plan and its tool calls (0: the plan package's
	// default).
	MaxSteps int
	// AllowExternal lets plans call tools whose effect is external.
	AllowExternal bool
}

// AgentBudgets are an agent's budgets; zero means the agent package's
// default (max_turns, max_tool_calls, max_handoffs) or no bound
// (max_tokens, timeout).
type AgentBudgets struct {
	MaxTurns     int
	MaxToolCalls int
	MaxTokens    int
	// MaxHandoffs bounds the transfers of the conversation (handoffs, and
	// handing back to an agent on the chain) over the whole task.
	MaxHandoffs int
	Timeout     time.Duration
}

// AgentTool is one entry of an agent's tools:. An entry with command: is
// an exec tool declared in place (Decl; agent.yaml only); one with
// workflow: declares the workflow tool of that flow folder (Workflow),
// which the loader makes (rein.LoadOptions.Workflow); one with neither
// names a tool of the rein.yaml beside it, an MCP tool or a Go tool the
// program registers.
type AgentTool struct {
	Name string
	// Workflow is the flow folder (absolute, or relative to the working
	// directory when the declaring file's was) whose workflow tool this
	// entry declares; the entry's name must be that tool's,
	// <flow name>_workflow.
	Workflow string
	// Agent is the agent folder (absolute, or relative to the working
	// directory when the declaring file's was) of an entry {agent: FOLDER}:
	// the tool is that agent, called with a task and answering with its
	// result (a sub-agent; the loader loads the folder, package agent runs
	// it as a sub-run of the call).
	Agent string
	// Approval (approval: required) makes every call wait for a person's
	// approval of its exact arguments.
	Approval bool
	// ResponseHook (response_hook:, beside workflow: only) is what the
	// workflow tool adds to the agent's final answer: ResponseHookAppend
	// appends each task's result (status, deliverables) the transcript
	// shows; "" adds nothing.
	ResponseHook string
	Decl         *ToolDecl
	Pos          Pos
}

// LoadAgent reads and checks an agent.yaml. The error is an *Error with
// every problem located (file:line:col), or an I/O error.
func LoadAgent(path string) (*AgentDef, error) {
	data, err := yamlnode.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("load agent: %w", err)
	}
	return ParseAgent(data, path)
}

// ParseAgent parses agent.yaml text; relative tool commands and schema
// files resolve against the folder of filename.
func ParseAgent(data []byte, filename string) (*AgentDef, error) {
	dir := filepath.Dir(filename)
	d := &decoder{diags: diagnostics{file: filename}, flow: &Flow{},
		schemas: &schemaSet{dir: dir, byName: map[string]*Schema{}, files: map[string]*Schema{},
			read: func(path string) ([]byte, error) { return yamlnode.ReadFile(path, MaxFileBytes) }}}
	a := &AgentDef{File: filename}
	file, err := yamlnode.Parse(data, yamlnode.Limits{What: "agent.yaml", MaxBytes: MaxFileBytes})
	if err != nil {
		d.syntaxError(err)
		return nil, d.result()
	}
	if len(file.Docs) != 1 || file.Docs[0].Body == nil {
		d.diags.add(Pos{1, 1}, "", "agent.yaml holds exactly one mapping with model:, instructions: and tools:")
		return nil, d.result()
	}
	root := file.Docs[0].Body
	fields, ok := fieldsOf(root)
	if !ok {
		d.diags.add(posOf(root), "", "agent.yaml must be a mapping, not %s", yamlnode.Kind(root))
		return nil, d.result()
	}
	scratch := Step{Backoff: Backoff{Initial: DefaultBackoffInitial, Max: DefaultBackoffMax, Multiplier: DefaultBackoffFactor}}
	for _, f := range fields {
		switch f.key {
		case "name":
			a.Name, _ = d.str(f, "")
		case "description":
			a.Description, _ = d.str(f, "")
		case "model":
			a.Model, _ = d.str(f, "")
			a.ModelPos = posOf(f.value)
		case "instructions":
			a.Instructions, _ = d.str(f, "")
		case "tools":
			a.Tools = d.decodeAgentTools(f, dir)
		case "budgets":
			a.Budgets = d.decodeAgentBudgets(f)
		case "output_schema":
			a.OutputSchema = d.schemaField(f, "output_schema", "")
		case "execute_plan":
			a.ExecutePlan = d.decodeAgentPlan(f, "")
		case "handoffs":
			a.Handoffs = d.decodeHandoffs(f, dir, "")
		case "context":
			a.Context = d.decodeAgentContext(f, "")
		case "guardrails":
			a.Guardrails = d.decodeGuardrails(f, "")
		case "review":
			a.Review = d.decodeReview(f)
		case "retries", "backoff":
			// checked here, located in agent.yaml, as a step's are; the
			// agent's flow step carries them (its model calls' retries).
			d.decodeStepField(&scratch, nil, f, "")
		case "max_observation_bytes", "max_args_bytes", "concurrency":
			if n, ok := d.integer(f, ""); ok {
				if n < 1 {
					d.diags.add(posOf(f.value), "", "%s must be at least 1", f.key)
				}
				switch f.key {
				case "concurrency":
					a.Concurrency = n
				case "max_args_bytes":
					a.MaxArgsBytes = n
				default:
					a.MaxObservationBytes = n
				}
			}
		default:
			d.unknownField(f, "", "agent.yaml", agentFields)
		}
	}
	if a.Model == "" {
		d.diags.add(posOf(root), "", "agent.yaml needs model: (a rein.yaml models: name, or provider/model like openai/gpt-4o-mini)")
	}
	d.checkResponseHooks(a.Tools, a.OutputSchema, "the agent")
	if err := d.result(); err != nil {
		return nil, err
	}
	return a, nil
}

// decodeAgentTools reads an agent's tools: names mapped to {} (or null),
// {approval: required}, {workflow: FOLDER} or an exec declaration; or a
// list of names, each a tool of rein.yaml, an MCP server or Go with no
// options (as agent definitions elsewhere write them).
func (d *decoder) decodeAgentTools(fl field, dir string) []*AgentTool {
	if seq, ok := fl.value.(*ast.SequenceNode); ok {
		return d.agentToolList(seq)
	}
	entries, ok := fieldsOf(fl.value)
	if !ok {
		if !isNull(fl.value) {
			d.diags.add(posOf(fl.value), "", "tools must map tool names to {} (a tool of rein.yaml or Go), {approval: required}, or an exec declaration with command:, or list tool names, not %s", yamlnode.Kind(fl.value))
		}
		return nil
	}
	var out []*AgentTool
	for _, e := range entries {
		mcp := isMCPToolName(e.key)
		if !mcp && !idPattern.MatchString(e.key) {
			d.diags.add(e.keyPos, "", "tool name %q must start with a letter or _ and hold only letters, digits, _ and -, or name a tool of a rein.yaml mcp: server as <server>.<tool>", e.key)
			continue
		}
		t := &AgentTool{Name: e.key, Pos: e.keyPos}
		out = append(out, t)
		if isNull(e.value) {
			continue
		}
		fields, ok := fieldsOf(e.value)
		if !ok {
			d.diags.add(posOf(e.value), "", "tool %s must be a mapping, not %s", e.key, yamlnode.Kind(e.value))
			continue
		}
		if f, ok := fieldByKey(fields, "approval"); ok {
			switch v, _ := d.str(f, ""); v {
			case "required":
				t.Approval = true
			case "none":
			default:
				d.diags.add(posOf(f.value), "", "tool %s: approval must be required or none, not %q", e.key, v)
			}
		}
		if mcp {
			for _, f := range fields {
				if f.key != "approval" {
					d.diags.add(f.keyPos, "", "tool %s is a tool of the MCP server %s (rein.yaml mcp:); it takes only approval: here", e.key, strings.SplitN(e.key, ".", 2)[0])
				}
			}
			continue
		}
		if f, ok := fieldByKey(fields, "workflow"); ok {
			t.Workflow = d.agentWorkflow(e, f, fields, dir)
			if h, ok := fieldByKey(fields, "response_hook"); ok {
				t.ResponseHook = d.responseHook(e, h)
			}
			continue
		}
		if f, ok := fieldByKey(fields, "agent"); ok {
			t.Agent = d.agentFolder(e, f, fields, dir)
			continue
		}
		if _, ok := fieldByKey(fields, "command"); ok {
			d.agentTool = true
			t.Decl = d.decodeTool(e, dir)
			d.agentTool = false
			continue
		}
		for _, f := range fields {
			if f.key != "approval" {
				d.diags.add(f.keyPos, "", "tool %s: %s belongs to an exec tool declaration, which needs command:; a tool of rein.yaml or Go takes only approval: here", e.key, f.key)
			}
		}
	}
	return out
}

// agentToolList reads tools: written as a list of tool names.
func (d *decoder) agentToolList(seq *ast.SequenceNode) []*AgentTool {
	out := make([]*AgentTool, 0, len(seq.Values))
	seen := map[string]bool{}
	for _, n := range seq.Values {
		name, ok := n.(*ast.StringNode)
		if !ok {
			d.diags.add(posOf(n), "", "tools: a list holds tool names, not %s; to give a tool approval: required or workflow:, write tools: as a mapping of names (send_email: {approval: required})", yamlnode.Kind(n))
			continue
		}
		if !isMCPToolName(name.Value) && !idPattern.MatchString(name.Value) {
			d.diags.add(posOf(n), "", "tool name %q must start with a letter or _ and hold only letters, digits, _ and -, or name a tool of a rein.yaml mcp: server as <server>.<tool>", name.Value)
			continue
		}
		if seen[name.Value] {
			d.diags.add(posOf(n), "", "tool %s is listed twice in tools:", name.Value)
			continue
		}
		seen[name.Value] = true
		out = append(out, &AgentTool{Name: name.Value, Pos: posOf(n)})
	}
	return out
}

// isMCPToolName reports whether name has the form of an MCP server's tool,
// <server>.<tool> (package tool/mcp names them so): a server name
// without spaces, a dot, and the tool's name on the server. Models are
// offered such tools under another name (model.WireNames).
func isMCPToolName(name string) bool {
	server, remote, ok := strings.Cut(name, ".")
	return ok && server != "" && remote != "" && !strings.ContainsAny(server, " \t") && yamlnode.NameProblem(name) == ""
}

// agentWorkflow reads a workflow: entry: a flow folder relative to
// agent.yaml, which must exist; only approval: goes beside it.
func (d *decoder) agentWorkflow(e, f field, fields []field, dir string) string {
	for _, g := range fields {
		if g.key != "approval" && g.key != "workflow" && g.key != "response_hook" {
			d.diags.add(g.keyPos, "", "tool %s: %s does not go with workflow: (a workflow tool takes only approval: and response_hook: beside it; command: declares an exec tool instead)", e.key, g.key)
		}
	}
	rel, ok := d.str(f, "")
	if !ok {
		return ""
	}
	if rel == "" {
		d.diags.add(posOf(f.value), "", "tool %s: workflow: needs the path of a flow folder, relative to the file that declares it", e.key)
		return ""
	}
	path := rel
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, rel)
	}
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		d.diags.add(posOf(f.value), "", "tool %s: workflow %q is not a flow folder (%s): give the path of a folder holding flow.yaml, relative to the file that declares it", e.key, rel, path)
		return ""
	}
	return path
}

// agentFolder reads an agent: entry: an agent folder (holding agent.yaml)
// relative to the declaring file, which must exist; only approval: goes
// beside it.
func (d *decoder) agentFolder(e, f field, fields []field, dir string) string {
	for _, g := range fields {
		if g.key != "approval" && g.key != "agent" {
			d.diags.add(g.keyPos, "", "tool %s: %s does not go with agent: (an agent called as a tool takes only approval: beside it)", e.key, g.key)
		}
	}
	rel, ok := d.str(f, "")
	if !ok {
		return ""
	}
	if rel == "" {
		d.diags.add(posOf(f.value), "", "tool %s: agent: needs the path of an agent folder (holding %s), relative to the file that declares it", e.key, AgentFile)
		return ""
	}
	path := rel
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, rel)
	}
	if st, err := os.Stat(filepath.Join(path, AgentFile)); err != nil || st.IsDir() {
		d.diags.add(posOf(f.value), "", "tool %s: agent %q is not an agent folder (no %s in %s): give the path of a folder holding %s, relative to the file that declares it", e.key, rel, AgentFile, path, AgentFile)
		return ""
	}
	return path
}

// decodeHandoffs reads handoffs:: a list of agent folders (relative to
// the declaring file), each a path or {agent: PATH, history: all|no_tools|last_user}.
func (d *decoder) decodeHandoffs(fl field, dir, label string) []*Handoff {
	seq, ok := fl.value.(*ast.SequenceNode)
	if !ok {
		d.diags.add(posOf(fl.value), label, "handoffs must be a list of agent folders (relative to this file), each a path or {agent: PATH, history: all|no_tools|last_user}, not %s", yamlnode.Kind(fl.value))
		return nil
	}
	var out []*Handoff
	seen := map[string]bool{}
	for _, n := range seq.Values {
		h := &Handoff{History: HistoryAll, Pos: posOf(n)}
		var pathNode ast.Node
		if fields, ok := fieldsOf(n); ok {
			for _, f := range fields {
				switch f.key {
				case "agent":
					h.Agent, _ = d.str(f, label)
					pathNode = f.value
				case "history":
					v, _ := d.str(f, label)
					switch v {
					case HistoryAll, HistoryNoTools, HistoryLastUser:
						h.History = v
					default:
						d.diags.add(posOf(f.value), label, "handoffs: history must be all, no_tools or last_user, not %q", v)
					}
				default:
					d.unknownField(f, label, "a handoff", handoffFields)
				}
			}
			if pathNode == nil {
				d.diags.add(posOf(n), label, "a handoff needs agent: (the agent folder, relative to this file)")
				continue
			}
		} else if sn, ok := n.(*ast.StringNode); ok {
			h.Agent, pathNode = sn.Value, n
		} else {
			d.diags.add(posOf(n), label, "a handoff is an agent folder (a path) or {agent: PATH, history: ...}, not %s", yamlnode.Kind(n))
			continue
		}
		if h.Agent == "" {
			d.diags.add(posOf(pathNode), label, "a handoff needs the path of an agent folder")
			continue
		}
		rel := h.Agent
		if !filepath.IsAbs(h.Agent) {
			h.Agent = filepath.Join(dir, rel)
		}
		h.Name = filepath.Base(h.Agent)
		if !idPattern.MatchString(h.Name) {
			d.diags.add(posOf(pathNode), label, "handoff %q: the folder's name %q is the handoff's (transfer_to_<name>): it must start with a letter or _ and hold only letters, digits, _ and -", rel, h.Name)
			continue
		}
		if st, err := os.Stat(filepath.Join(h.Agent, AgentFile)); err != nil || st.IsDir() {
			d.diags.add(posOf(pathNode), label, "handoff %q is not an agent folder (no %s in %s): give the path of a folder holding %s, relative to this file", rel, AgentFile, h.Agent, AgentFile)
			continue
		}
		if seen[h.Name] {
			d.diags.add(posOf(pathNode), label, "handoff %s is listed twice", h.Name)
			continue
		}
		seen[h.Name] = true
		out = append(out, h)
	}
	return out
}

// ResponseHookAppend is the response_hook: that appends a workflow tool's
// task results (status, deliverables) to the agent's final answer.
const ResponseHookAppend = "append_result"

// responseHook reads response_hook: beside workflow:.
func (d *decoder) responseHook(e, f field) string {
	v, ok := d.str(f, "")
	if !ok {
		return ""
	}
	if v != ResponseHookAppend {
		d.diags.add(posOf(f.value), "", "tool %s: response_hook must be %s (append each task's status and deliverables to the final answer), not %q", e.key, ResponseHookAppend, v)
		return ""
	}
	return v
}

// checkResponseHooks refuses a response_hook on an agent whose final
// answer is a JSON value (output_schema): the hook appends text.
func (d *decoder) checkResponseHooks(tools []*AgentTool, output *Schema, what string) {
	if output == nil {
		return
	}
	for _, t := range tools {
		if t.ResponseHook != "" {
			d.diags.add(t.Pos, "", "tool %s: response_hook: %s appends text to the final answer, and %s has output_schema (its answer is a JSON value): remove one of them", t.Name, t.ResponseHook, what)
		}
	}
}

// decodeAgentPlan reads execute_plan: a boolean, or a mapping of
// agentPlanFields.
func (d *decoder) decodeAgentPlan(fl field, label string) AgentPlan {
	var p AgentPlan
	fields, ok := fieldsOf(fl.value)
	if !ok {
		if on, ok := d.boolean(fl, label); ok {
			p.Disabled = !on
		}
		return p
	}
	for _, f := range fields {
		switch f.key {
		case "enabled":
			if on, ok := d.boolean(f, label); ok {
				p.Disabled = !on
			}
		case "allow_external":
			p.AllowExternal, _ = d.boolean(f, label)
		case "max_steps":
			if n, ok := d.integer(f, label); ok {
				if n < 1 {
					d.diags.add(posOf(f.value), label, "execute_plan: max_steps must be at least 1")
				}
				p.MaxSteps = n
			}
		default:
			d.unknownField(f, label, "execute_plan", agentPlanFields)
		}
	}
	return p
}

// decodeAgentContext reads context: a mapping of agentContextFields;
// max_tokens is required, strategy is trim (the default) or summarize,
// prompt goes with summarize only.
func (d *decoder) decodeAgentContext(fl field, label string) AgentContext {
	var c AgentContext
	fields, ok := fieldsOf(fl.value)
	if !ok {
		d.diags.add(posOf(fl.value), label, "context must be a mapping of %v (e.g. {max_tokens: 8000, strategy: summarize}), not %s", agentContextFields, yamlnode.Kind(fl.value))
		return c
	}
	c.Strategy = "trim"
	var promptPos *Pos
	for _, f := range fields {
		switch f.key {
		case "max_tokens":
			if n, ok := d.integer(f, label); ok {
				if n < 1 {
					d.diags.add(posOf(f.value), label, "context: max_tokens must be at least 1")
				}
				c.MaxTokens = n
			}
		case "strategy":
			v, ok := d.str(f, label)
			if ok && v != "trim" && v != "summarize" {
				d.diags.add(posOf(f.value), label, "context: strategy must be trim (leave the oldest turns out) or summarize (a model's summary of them), not %q", v)
			}
			c.Strategy = v
		case "prompt":
			c.Prompt, _ = d.str(f, label)
			p := f.keyPos
			promptPos = &p
		default:
			d.unknownField(f, label, "context", agentContextFields)
		}
	}
	if c.MaxTokens == 0 {
		d.diags.add(posOf(fl.value), label, "context needs max_tokens: the most tokens one model request may send")
	}
	if promptPos != nil && c.Strategy != "summarize" {
		d.diags.add(*promptPos, label, "context: prompt is the summary request's; it goes with strategy: summarize")
	}
	return c
}

func (d *decoder) decodeAgentBudgets(fl field) AgentBudgets {
	var b AgentBudgets
	fields, ok := fieldsOf(fl.value)
	if !ok {
		d.diags.add(posOf(fl.value), "", "budgets must be a mapping of %v, not %s", agentBudgetFields, yamlnode.Kind(fl.value))
		return b
	}
	for _, f := range fields {
		if f.key == "timeout" {
			if v, ok := d.duration(f, ""); ok {
				if v <= 0 {
					d.diags.add(posOf(f.value), "", "budgets: timeout must be positive")
				}
				b.Timeout = v
			}
			continue
		}
		var dst *int
		switch f.key {
		case "max_turns":
			dst = &b.MaxTurns
		case "max_tool_calls":
			dst = &b.MaxToolCalls
		case "max_tokens":
			dst = &b.MaxTokens
		case "max_handoffs":
			dst = &b.MaxHandoffs
		default:
			d.unknownField(f, "", "budgets", agentBudgetFields)
			continue
		}
		if n, ok := d.integer(f, ""); ok {
			if n < 1 {
				d.diags.add(posOf(f.value), "", "budgets: %s must be at least 1", f.key)
			}
			*dst = n
		}
	}
	return b
}

// agentSpec returns s's agent definition, making it.
func (d *decoder) agentSpec(s *Step) *AgentDef {
	if s.Agent == nil {
		s.Agent = &AgentDef{File: d.diags.file}
	}
	return s.Agent
}

// checkAgentStep checks a type: agent step once its fields are read: a
// prompt_template (the task), a model, tools by name (exec tools are
// declared in the flow's tools:) or workflow tools (workflow:, made by the
// loader), none of the fields of other kinds.
func (d *decoder) checkAgentStep(s *Step, src *stepSrc, pos Pos, label string) {
	a := d.agentSpec(s)
	a.Name, a.Model, a.OutputSchema = s.ID, s.Model, s.OutputSchema
	if f, ok := src.fields["concurrency"]; ok {
		if n, ok := d.integerQuiet(f); ok {
			a.Concurrency = n // calls of one turn at once
		}
	}
	if _, ok := src.fields["prompt_template"]; !ok {
		d.diags.add(pos, label, "an agent step needs a prompt_template: the task it hands the agent")
	}
	if _, ok := src.fields["tools"]; !ok {
		d.diags.add(pos, label, "an agent step needs tools: (a list of tool names, or names mapped to {} or {approval: required})")
	}
	for _, t := range a.Tools {
		if t.Decl != nil {
			d.diags.add(t.Pos, label, "tool %s: declare exec tools in the flow's tools: (or rein.yaml); an agent step names them", t.Name)
		}
	}
	for _, k := range []string{"tool", "args", "for_each", "repeat", "approval", "message", "fallback"} {
		if f, ok := src.fields[k]; ok {
			d.diags.add(f.keyPos, label, "%s does not belong to an agent step", k)
		}
	}
}
