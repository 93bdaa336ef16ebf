package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPDrivesTheProcessWorkflow drives examples/process-workflow over
// MCP as an agent host would: the go-sdk client spawns `rein mcp`, finds
// the workflow tool and walks a task from start to delivery, one
// submission first breaking its contract and being corrected.
func TestMCPDrivesTheProcessWorkflow(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "process-workflow")
	if err := os.CopyFS(dir, os.DirFS("../../examples/process-workflow")); err != nil {
		t.Fatal(err)
	}
	m := serveMCP(t, filepath.Join(t.TempDir(), "rein.db"), dir)
	ctx, cs := m.ctx, m.cs

	listed, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var schema []byte
	for _, tl := range listed.Tools {
		if tl.Name == "process_workflow" {
			schema, _ = json.Marshal(tl.InputSchema)
		}
	}
	if !strings.Contains(string(schema), `"action"`) || !strings.Contains(string(schema), "submit_from_source") {
		t.Fatalf("process_workflow's input schema = %s (tools %d)", schema, len(listed.Tools))
	}

	call := func(args map[string]any) (map[string]any, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "process_workflow", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		text := res.Content[0].(*sdk.TextContent).Text
		var out map[string]any
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			t.Fatalf("%v: answer is not a JSON object: %s", args["action"], text)
		}
		if res.IsError && res.StructuredContent != nil {
			t.Errorf("%v: an error has structured content %v; want its text only", args["action"], res.StructuredContent)
		} else if got, _ := json.Marshal(res.StructuredContent); !res.IsError && string(got) != mustCompact(t, text) {
			t.Errorf("%v: structured content %s differs from the text %s", args["action"], got, text)
		}
		return out, res.IsError
	}
	next := func(a map[string]any) []string {
		var ids []string
		acts, _ := a["next_actions"].([]any)
		for _, n := range acts {
			ids = append(ids, n.(map[string]any)["step_id"].(string))
		}
		return ids
	}

	a, isErr := call(map[string]any{"action": "start", "session_id": "s1", "input": map[string]any{"description": "a welded frame with a bracket"}})
	if isErr || a["status"] != "waiting" || !slices.Equal(next(a), []string{"parse"}) {
		t.Fatalf("start = %v", a)
	}
	task := a["task_id"].(string)
	if a, isErr = call(map[string]any{"action": "submit", "task_id": task, "step_id": "parse", "skill": "parse-input",
		"data": map[string]any{"items": []any{"frame", "bracket"}}}); isErr || !slices.Equal(next(a), []string{"route"}) {
		t.Fatalf("submit parse = %v", a)
	}
	// a broken contract: an MCP tool error carrying every problem.
	e, isErr := call(map[string]any{"action": "submit", "task_id": task, "step_id": "route", "data": map[string]any{"route": 7, "steps": []any{"cut", 3}}})
	if !isErr || e["error_type"] != "business" || e["retryable"] != false {
		t.Fatalf("broken submission = %v (error %v)", e, isErr)
	}
	var ptrs []string
	for _, p := range e["problems"].([]any) {
		ptrs = append(ptrs, p.(map[string]any)["pointer"].(string))
	}
	if !slices.Equal(ptrs, []string{"/route", "/steps/1"}) {
		t.Errorf("problems = %v", e["problems"])
	}
	if a, isErr = call(map[string]any{"action": "submit", "task_id": task, "step_id": "route", "data": map[string]any{"route": "weld", "steps": []any{"cut", "weld"}}}); isErr || !slices.Equal(next(a), []string{"assign"}) {
		t.Fatalf("corrected route = %v", a)
	}
	if a, isErr = call(map[string]any{"action": "submit_from_source", "task_id": task, "step_id": "assign", "skill": "assign-materials"}); isErr || a["status"] != "succeeded" || len(next(a)) != 0 {
		t.Fatalf("submit_from_source = %v", a)
	}
	a, isErr = call(map[string]any{"action": "prepare_delivery", "task_id": task})
	if isErr {
		t.Fatalf("prepare_delivery = %v", a)
	}
	files := a["delivery"].(map[string]any)["files"].([]any)
	var names []string
	for _, f := range files {
		f := f.(map[string]any)
		names = append(names, f["name"].(string))
		raw, err := os.ReadFile(f["path"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != f["sha256"] {
			t.Errorf("%s: its sha256 differs from the answer's", f["name"])
		}
		if !strings.HasPrefix(f["path"].(string), dir) {
			t.Errorf("%s written outside the flow's folder: %s", f["name"], f["path"])
		}
	}
	if !slices.Contains(names, "deliverables.xlsx") || !slices.Contains(names, "deliverables.csv") {
		t.Errorf("delivered %v", names)
	}
}

func mustCompact(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
