package flow_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/flow"
)

// TestDesignExamplesLoad loads the two reference flows kept under
// testdata/design (resume_screen, an LLM workflow; process, an
// agent-driven one), which the format must keep loading unchanged.
func TestDesignExamplesLoad(t *testing.T) {
	t.Parallel()
	t.Run("resume_screen", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join("testdata", "design", "resume_screen", "flow.yaml")
		f, err := flow.Load(path, testOptions())
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if f.Name != "resume_screen" || f.MaxIterations != 10 {
			t.Errorf("Name, MaxIterations = %q, %d; want resume_screen, 10", f.Name, f.MaxIterations)
		}
		if got := stepIDs(f); got != "extract_info,score_candidate,notify_result" {
			t.Errorf("steps = %s", got)
		}
		ex, sc, no := f.Steps[0], f.Steps[1], f.Steps[2]
		if ex.Type != flow.LLM || ex.Model != "gpt-4o-mini" || ex.Retries != 2 || ex.Timeout != 30*time.Second || ex.OnError != flow.Raise {
			t.Errorf("extract_info = %+v", ex)
		}
		if ex.OutputSchema == nil || ex.OutputSchema.Name != "resume_schema" {
			t.Errorf("extract_info output_schema = %v, want resume_schema from schemas/", ex.OutputSchema)
		}
		if sc.OnError != flow.Fallback || !sc.HasFallbackValue || sc.Timeout != 40*time.Second {
			t.Errorf("score_candidate = %+v", sc)
		}
		if no.Type != flow.Tool || no.Tool != "send_email" || no.OnError != flow.Skip || no.When == nil || no.Retries != 3 {
			t.Errorf("notify_result = %+v", no)
		}
		if !f.IsUpstream(no, "extract_info") || !f.IsUpstream(no, "score_candidate") || f.IsUpstream(no, "notify_result") {
			t.Errorf("Upstream(notify_result) = %v", f.Upstream(no))
		}
		if strings.Join(f.UndeclaredInputs, ",") != "input_text" {
			t.Errorf("UndeclaredInputs = %v, want [input_text]", f.UndeclaredInputs)
		}
		if len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0].Message, "{input_text}") {
			t.Errorf("Warnings = %v, want one about {input_text}", f.Warnings)
		}
	})
	t.Run("process", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join("testdata", "design", "process", "flow.yaml")
		f, err := flow.Load(path, testOptions())
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if f.Format != "process.workflow.v1" || f.ID != "process.from-long-desc.v1" || !f.Enabled || f.Idempotency != "session_workflow_input_hash" {
			t.Errorf("flow = %q %q %v %q", f.Format, f.ID, f.Enabled, f.Idempotency)
		}
		parse, route := f.Steps[0], f.Steps[1]
		if parse.Type != flow.Submit || parse.Skill != "parse-input" || parse.OutputSchema == nil || parse.OutputSchema.Name != "process.parsed-input.v1" {
			t.Errorf("parse = %+v", parse)
		}
		if route.Type != flow.Submit || route.Skill != "route-item" || !f.IsUpstream(route, "parse") {
			t.Errorf("route = %+v", route)
		}
	})
}

func stepIDs(f *flow.Flow) string {
	ids := make([]string, len(f.Steps))
	for i, s := range f.Steps {
		ids[i] = s.ID
	}
	return strings.Join(ids, ",")
}
