package workflowtool

import (
	"bytes"
	"encoding/json"

	"github.com/reinhq/rein/flow"
)

// inputSchema is the JSON Schema of a workflow tool's arguments.
const inputSchema = `{
  "type": "object",
  "required": ["action"],
  "properties": {
    "action": {"enum": ["start", "submit", "submit_from_source", "prepare_delivery", "status", "cancel"],
      "description": "start a task; submit a step's output; submit_from_source to have a source step's adapter produce it; prepare_delivery once the task succeeded; status; cancel"},
    "workflow_id": {"type": "string", "description": "start: the workflow's id (optional)"},
    "session_id": {"type": "string", "description": "start: the agent's session (the same session and input start the same task)"},
    "input": {"description": "start: the task's input"},
    "task_id": {"type": "string", "description": "every action but start: the task"},
    "step_id": {"type": "string", "description": "submit, submit_from_source: a ready step of next_actions"},
    "skill": {"type": "string", "description": "submit, submit_from_source: the step's skill"},
    "data": {"description": "submit: the step's output, valid against its output_schema"},
    "reason": {"type": "string", "description": "cancel: why"}
  },
  "additionalProperties": false
}`

// InputSchema returns the JSON Schema of a workflow tool's arguments.
func InputSchema() json.RawMessage { return json.RawMessage(inputSchema) }

// outputSchema is the JSON Schema of a workflow tool's answer (Answer), so
// a host knows what it gets back: the task, its status and the steps it
// waits on always; artifacts, a failure and a delivery as they apply.
const outputSchema = `{
  "type": "object",
  "required": ["task_id", "workflow", "status", "next_actions", "artifacts"],
  "properties": {
    "task_id": {"type": "string"},
    "workflow": {"type": "string"},
    "status": {"enum": ["pending", "running", "waiting", "succeeded", "failed", "cancelled"]},
    "existing": {"type": "boolean"},
    "next_actions": {"type": ["array", "null"], "items": {"type": "object", "required": ["step_id", "action"],
      "properties": {"step_id": {"type": "string"}, "action": {"enum": ["submit", "submit_from_source", "confirm"]},
        "skill": {"type": "string"}, "output_schema": {}, "requires_confirmation": {"type": "boolean"}, "instruction": {"type": "string"}}}},
    "artifacts": {"type": ["array", "null"], "items": {"type": "object"}},
    "deliverables": {"type": "array", "items": {"type": "string"}},
    "failure": {},
    "delivery": {"type": "object"}
  }
}`

// OutputSchema returns the JSON Schema of a workflow tool's answer.
func OutputSchema() json.RawMessage { return json.RawMessage(outputSchema) }

// schemaFor is InputSchema for the tool of f: "input" is f's inputs:
// schema (an object when it declares none), and "input" and "data" may
// also be given as JSON text, a string holding the object, which some
// hosts send (jsonText).
func schemaFor(f *flow.Flow) json.RawMessage {
	var s map[string]any
	if err := json.Unmarshal([]byte(inputSchema), &s); err != nil {
		panic("workflowtool: the input schema does not decode: " + err.Error())
	}
	props := s["properties"].(map[string]any)
	var inputs any = map[string]any{"type": "object"}
	if f != nil && f.Inputs != nil && f.Inputs.Doc != nil {
		inputs = f.Inputs.Doc
	}
	text := map[string]any{"type": "string", "description": "the same object as JSON text"}
	props["input"] = map[string]any{
		"description": "start: the task's input, valid against the workflow's inputs schema (an object, or the object as JSON text)",
		"anyOf":       []any{inputs, text},
	}
	props["data"] = map[string]any{
		"description": "submit: the step's output, valid against its output_schema (next_actions says it); an object, an array, or either as JSON text",
		"anyOf":       []any{map[string]any{"type": "object"}, map[string]any{"type": "array"}, text},
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic("workflowtool: the input schema does not encode: " + err.Error())
	}
	return b
}

// jsonText returns raw's string content when raw is a JSON string holding
// a JSON object or array (a host that sends an object as text), else raw.
func jsonText(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || raw[0] != '"' {
		return raw
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return raw
	}
	t := bytes.TrimSpace([]byte(s))
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') || !json.Valid(t) {
		return raw
	}
	return t
}
