package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/agent"
)

// taskResult is what the response hook reads of a workflow tool's answer
// (server/workflowtool.Answer; the engine does not import it): the small
// fields an observation keeps whole even when it is cut.
type taskResult struct {
	TaskID      string `json:"task_id"`
	Workflow    string `json:"workflow"`
	Status      string `json:"status"`
	NextActions []struct {
		StepID string `json:"step_id"`
		Action string `json:"action"`
	} `json:"next_actions"`
	Artifacts []struct {
		StepID string `json:"step_id"`
		SHA256 string `json:"sha256"`
	} `json:"artifacts"`
	Deliverables []string `json:"deliverables"`
	Failure      *struct {
		Message string `json:"message"`
	} `json:"failure"`
	Delivery *struct {
		Dir string `json:"dir"`
	} `json:"delivery"`
}

// appendWorkflowResults is the response hook of an agent step (a
// workflow tool's response_hook: append_result): after the final text
// answer it appends, for each such tool, every task the transcript's
// calls of it answered about, in the order the tasks first appear, as the
// tool's last answer for the task said it (status; what it waits on when
// it is not final; each deliverable with its digest). It reads only the
// transcript, so a resumed run appends the same text. An answer that is
// not text, or an agent without the hook, is returned as it is.
func appendWorkflowResults(tools []*flow.AgentTool, turns []agent.Turn, answer any) any {
	text, ok := answer.(string)
	if !ok {
		return answer
	}
	var b strings.Builder
	for _, t := range tools {
		if t.ResponseHook != flow.ResponseHookAppend {
			continue
		}
		var order []string
		last := map[string]*taskResult{}
		for i := range turns {
			for _, c := range turns[i].Calls {
				if c.Tool != t.Name || c.Status != agent.StatusOK {
					continue
				}
				r := new(taskResult)
				if json.Unmarshal([]byte(c.Observation), r) != nil || r.TaskID == "" {
					continue
				}
				if last[r.TaskID] == nil {
					order = append(order, r.TaskID)
				}
				last[r.TaskID] = r
			}
		}
		if len(order) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n\nWorkflow results (%s):", t.Name)
		for _, id := range order {
			b.WriteString("\n- ")
			writeTaskResult(&b, last[id])
		}
	}
	if b.Len() == 0 {
		return answer
	}
	return text + b.String()
}

// writeTaskResult writes one task's line: "task ID (workflow W):
// succeeded; deliverables: report sha256:0123456789ab".
func writeTaskResult(b *strings.Builder, r *taskResult) {
	fmt.Fprintf(b, "task %s (workflow %s): %s", r.TaskID, r.Workflow, r.Status)
	if r.Failure != nil && r.Failure.Message != "" {
		fmt.Fprintf(b, " (%s)", r.Failure.Message)
	}
	if len(r.NextActions) > 0 {
		b.WriteString("; waits on")
		for i, a := range r.NextActions {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(b, "%s %s (%s)", sep, a.StepID, a.Action)
		}
	}
	if len(r.Deliverables) > 0 {
		digests := map[string]string{}
		for _, a := range r.Artifacts {
			digests[a.StepID] = a.SHA256
		}
		b.WriteString("; deliverables:")
		for i, id := range r.Deliverables {
			if i > 0 {
				b.WriteByte(',')
			}
			if d := digests[id]; d != "" {
				fmt.Fprintf(b, " %s sha256:%.12s", id, d)
			} else {
				fmt.Fprintf(b, " %s (not produced yet)", id)
			}
		}
	}
	if r.Delivery != nil && r.Delivery.Dir != "" {
		fmt.Fprintf(b, "; delivery: %s", r.Delivery.Dir)
	}
}
