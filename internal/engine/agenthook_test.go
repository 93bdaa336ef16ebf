package engine

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/agent"
)

// The response hook appends each task of a hooked workflow tool as the
// tool's last answer for it said, in the order the tasks first appear;
// nothing for a tool without the hook, a failed call, a non-JSON
// observation or an answer that is not text.
func TestAppendWorkflowResults(t *testing.T) {
	t.Parallel()
	tools := []*flow.AgentTool{
		{Name: "process_workflow", Workflow: "/p", ResponseHook: flow.ResponseHookAppend},
		{Name: "quiet_workflow", Workflow: "/q"},
	}
	call := func(tool string, status agent.CallStatus, obs string) agent.Call {
		return agent.Call{Tool: tool, Status: status, Observation: obs}
	}
	turns := []agent.Turn{
		{N: 1, Calls: []agent.Call{
			call("process_workflow", agent.StatusOK, `{"task_id":"t1","workflow":"process","status":"waiting","next_actions":[{"step_id":"parse","action":"submit"},{"step_id":"ok","action":"confirm"}],"artifacts":[],"deliverables":["assign"]}`),
			call("quiet_workflow", agent.StatusOK, `{"task_id":"q1","workflow":"quiet","status":"succeeded","artifacts":[],"deliverables":["x"]}`),
		}},
		{N: 2, Calls: []agent.Call{
			call("process_workflow", agent.StatusOK, `{"task_id":"t2","workflow":"process","status":"failed","failure":{"class":"business","message":"step parse failed"},"artifacts":[],"deliverables":["assign"]}`),
			call("process_workflow", agent.StatusFailed, `tool process_workflow: no such task`),
			call("process_workflow", agent.StatusOK, `not json`),
		}},
		{N: 3, Calls: []agent.Call{
			call("process_workflow", agent.StatusOK, `{"task_id":"t1","workflow":"process","status":"succeeded","next_actions":[],"artifacts":[{"step_id":"parse","sha256":"aaaaaaaaaaaaaaaa"},{"step_id":"assign","sha256":"0123456789abcdef0123"}],"deliverables":["assign","summary"],"delivery":{"dir":"/out/t1"}}`),
		}},
		{N: 4, Text: "Done.", Final: true, Answer: "Done."},
	}
	got := appendWorkflowResults(tools, turns, "Done.")
	want := "Done.\n\nWorkflow results (process_workflow):" +
		"\n- task t1 (workflow process): succeeded; deliverables: assign sha256:0123456789ab, summary (not produced yet); delivery: /out/t1" +
		"\n- task t2 (workflow process): failed (step parse failed); deliverables: assign (not produced yet)"
	if got != want {
		t.Errorf("answer:\n%s\nwant:\n%s", got, want)
	}
	// the waiting task, before turn 3
	if got := appendWorkflowResults(tools, turns[:1], "Started."); !strings.HasSuffix(got.(string), "- task t1 (workflow process): waiting; waits on parse (submit), ok (confirm); deliverables: assign (not produced yet)") {
		t.Errorf("waiting task: %q", got)
	}
	obj := map[string]any{"ok": true}
	if got := appendWorkflowResults(tools, turns, obj); got.(map[string]any)["ok"] != true || len(got.(map[string]any)) != 1 {
		t.Errorf("a JSON answer changed: %v", got)
	}
	if got := appendWorkflowResults(tools[1:], turns, "Done."); got != "Done." {
		t.Errorf("without the hook: %q", got)
	}
}
