package workflowtool_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinhq/rein/value/schema"
)

// The tool tells a host what to give and what it gets back: "input" is the
// flow's inputs: schema (or that object as JSON text), the answer has an
// output schema, and an input or data sent as JSON text is read as the
// object it holds (the MCP Inspector sends strings).
func TestToolSchemaIsTyped(t *testing.T) {
	t.Parallel()
	w := newWorkflow(t, "../../examples/process-workflow", openStore(t))
	spec := w.Tool().Spec()
	var in struct {
		Properties map[string]struct {
			AnyOf []map[string]any `json:"anyOf"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(spec.InputSchema, &in); err != nil {
		t.Fatal(err)
	}
	input := in.Properties["input"].AnyOf
	if len(input) != 2 || input[0]["type"] != "object" || !strings.Contains(string(mustJSON(t, input[0])), `"required":["description"]`) || input[1]["type"] != "string" {
		t.Fatalf("input's schema is not the flow's inputs: %s", mustJSON(t, input))
	}
	if data := in.Properties["data"].AnyOf; len(data) != 3 {
		t.Fatalf("data's schema: %s", mustJSON(t, data))
	}
	// the schemas compile, and the answer of a start fits the output schema.
	if _, err := schema.Compile("input", json.RawMessage(spec.InputSchema)); err != nil {
		t.Fatalf("input schema: %v", err)
	}
	out, err := schema.Compile("output", json.RawMessage(spec.OutputSchema))
	if err != nil {
		t.Fatalf("output schema: %v", err)
	}
	a := mustDo(t, w, `{"action":"start","session_id":"s","input":"{\"description\": \"a frame\"}"}`)
	var answer any
	if err := json.Unmarshal(mustJSON(t, a), &answer); err != nil {
		t.Fatal(err)
	}
	if err := out.Validate(answer); err != nil {
		t.Fatalf("the answer breaks the output schema: %v\n%s", err, mustJSON(t, a))
	}
	if a.Status != "waiting" || len(a.NextActions) == 0 || a.NextActions[0].StepID != "parse" {
		t.Fatalf("start with the input as JSON text: %+v", a)
	}
	// data as JSON text is the object it holds; a string that is no
	// object stays a string, which the step's schema refuses.
	if _, e := do(t, w, `{"action":"submit","task_id":"`+a.TaskID+`","step_id":"parse","data":"not json"}`); e == nil || e.Type != "business" {
		t.Fatalf("a plain string as data: %+v", e)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
