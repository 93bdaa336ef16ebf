package workflowtool

import "encoding/json"

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
