package project

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/goccy/go-yaml"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/yamlnode"
)

// AgentStep is the id of the one step of an agent run (LoadAgent): its
// calls that wait for a person are approvals of step AgentStep/turn<t>/call<c>.
const AgentStep = "agent"

// LoadAgent reads the agent folder dir (agent.yaml, and beside it the
// rein.yaml and script.yaml Load would pick up) and returns a Project whose
// flow is one step of type agent with agent.yaml's fields, its task the run
// input's "task". A durable run of it is a run like any other (rein runs
// list, show, resume, approve). A *flow.Error lists every problem of
// agent.yaml, located in it; tools and models it names that do not resolve
// are located there too.
func LoadAgent(dir string, opts *LoadOptions) (*Project, error) {
	if opts == nil {
		opts = &LoadOptions{}
	}
	path := filepath.Join(dir, flow.AgentFile)
	def, err := flow.LoadAgent(path)
	if err != nil {
		return nil, err
	}
	data, err := yamlnode.ReadFile(path, flow.MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("load agent: %w", err)
	}
	text, err := agentFlowText(def, data, dir)
	if err != nil {
		return nil, fmt.Errorf("load agent %s: %w", path, err)
	}
	o := *opts
	o.flowText = text
	o.agent = def
	if len(o.agentChain) == 0 {
		o.agentChain = []string{absPath(dir)} // an agent cannot call itself
	}
	return Load(path, &o)
}

// IsAgentDir reports whether dir holds an agent.yaml and no flow.yaml.
func IsAgentDir(dir string) bool {
	st, err := os.Stat(dir)
	return err == nil && st.IsDir() && exists(filepath.Join(dir, flow.AgentFile)) && !exists(filepath.Join(dir, FlowFile))
}

// agentFlowText writes the flow of an agent run: agent.yaml's fields as
// one agent step (exec tools declared in place move to the flow's tools:,
// workflow tools keep their folder, made absolute), as JSON, which is
// YAML. The run pins this text.
func agentFlowText(def *flow.AgentDef, data []byte, dir string) ([]byte, error) {
	var src map[string]any
	if err := yaml.Unmarshal(data, &src); err != nil {
		return nil, err
	}
	name := def.Name
	if name == "" {
		name = filepath.Base(dir)
	}
	step := map[string]any{"id": AgentStep, "type": "agent", "prompt_template": "{input.task}"}
	for _, k := range []string{"model", "instructions", "budgets", "output_schema", "max_observation_bytes", "max_args_bytes", "concurrency", "description", "execute_plan", "retries", "backoff", "context", "guardrails"} {
		if v, ok := src[k]; ok {
			step[k] = v
		}
	}
	tools := map[string]any{}
	declared := map[string]any{}
	srcTools, _ := src["tools"].(map[string]any)
	for _, t := range def.Tools {
		entry := map[string]any{}
		if t.Approval {
			entry["approval"] = "required"
		}
		if t.Workflow != "" {
			entry["workflow"] = absPath(t.Workflow) // the run pins the folder
		}
		if t.Agent != "" {
			entry["agent"] = absPath(t.Agent) // loaded again from there on resume
		}
		if t.ResponseHook != "" {
			entry["response_hook"] = t.ResponseHook
		}
		tools[t.Name] = entry
		if t.Decl != nil {
			decl := map[string]any{}
			if m, ok := srcTools[t.Name].(map[string]any); ok {
				for k, v := range m {
					if k != "approval" {
						decl[k] = v
					}
				}
			}
			declared[t.Name] = decl
		}
	}
	step["tools"] = tools
	if len(def.Handoffs) > 0 {
		hs := make([]any, len(def.Handoffs))
		for i, h := range def.Handoffs {
			hs[i] = map[string]any{"agent": absPath(h.Agent), "history": h.History} // loaded again from there on resume
		}
		step["handoffs"] = hs
	}
	f := map[string]any{
		"name": name,
		"inputs": map[string]any{"type": "object", "required": []any{"task"}, "properties": map[string]any{
			"task": map[string]any{"type": "string", "minLength": 1},
			// the earlier exchanges of a chat session (rein chat), oldest
			// first: messages, tool calls and their observations
			"history": historySchema(),
			// the agents the session's last answer came from after
			// handoffs, outermost first: the conversation continues
			// with the last of them (rein chat)
			"last_agent": map[string]any{"type": "array", "maxItems": 8, "items": map[string]any{"type": "string", "minLength": 1, "maxLength": 256}},
		}},
		"steps": []any{step},
	}
	if len(declared) > 0 {
		f["tools"] = declared
	}
	if r, ok := src["review"]; ok {
		f["review"] = r // the reviewer of the agent's runs, as a flow's review:
	}
	return json.MarshalIndent(f, "", "  ")
}

// historySchema is the schema of an agent run's input "history" (package
// session's Message): user and assistant messages, an assistant's tool
// calls and the tool messages that answer them.
func historySchema() map[string]any {
	str := map[string]any{"type": "string"}
	call := map[string]any{"type": "object", "required": []any{"id", "tool", "args"}, "additionalProperties": false,
		"properties": map[string]any{"id": str, "tool": str, "args": str}}
	return map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []any{"role", "content"},
		"additionalProperties": false, "properties": map[string]any{
			"role":         map[string]any{"enum": []any{"user", "assistant", "tool"}},
			"content":      str,
			"tool_calls":   map[string]any{"type": "array", "items": call},
			"tool_call_id": str,
			"tool":         str,
			"is_error":     map[string]any{"type": "boolean"},
		}}}
}

// checkAgent reports, located in agent.yaml, the tools and the model def
// names that do not resolve.
func checkAgent(def *flow.AgentDef, fopts *flow.Options) error {
	var diags []flow.Diagnostic
	for _, t := range def.Tools {
		if t.Decl != nil || t.Workflow != "" || t.Agent != "" {
			continue
		}
		if _, ok := fopts.Tools(t.Name); !ok {
			diags = append(diags, flow.Diagnostic{File: def.File, Line: t.Pos.Line, Col: t.Pos.Col,
				Message: fmt.Sprintf("unknown tool %q: declare it in the rein.yaml beside agent.yaml, declare it here with command:, or register it in Go", t.Name)})
		}
	}
	if def.Model != "" && !fopts.Models(def.Model) {
		diags = append(diags, flow.Diagnostic{File: def.File, Line: def.ModelPos.Line, Col: def.ModelPos.Col,
			Message: fmt.Sprintf("model %q is not configured: pass --script FILE (or a script.yaml beside agent.yaml), name one in rein.yaml models:, or give provider/model", def.Model)})
	}
	if r := def.Review; r != nil && r.Review.Model != "" && !fopts.Models(r.Review.Model) {
		diags = append(diags, flow.Diagnostic{File: def.File, Line: r.ModelPos.Line, Col: r.ModelPos.Col,
			Message: fmt.Sprintf("review: model %q is not configured: name one in rein.yaml models:, give provider/model, or answer it in script.yaml", r.Review.Model)})
	}
	if len(diags) > 0 {
		return &flow.Error{Diagnostics: diags}
	}
	return nil
}
