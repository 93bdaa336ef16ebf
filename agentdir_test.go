package rein_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
)

// An agent run's input history is the conversation the model sees before
// the task; an entry that is not {role: user|assistant, content} is
// refused before anything runs.
func TestAgentInputHistory(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"agent.yaml": "name: echo\nmodel: m\ninstructions: answer\n",
		"script.yaml": `replies:
  - step: agent
    decision: agent
    contains: "first question\nsecond question"
    raw: "saw both"
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := project.LoadAgent(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	res, err := clientOf(nil).Start(ctx, p, map[string]any{"task": "second question", "history": []any{
		map[string]any{"role": "user", "content": "first question"},
		map[string]any{"role": "assistant", "content": "first answer"},
	}}, nil)
	if err != nil || res.Outputs[project.AgentStep] != "saw both" {
		t.Fatalf("with history: %v, %+v", err, res)
	}
	if res, err = clientOf(nil).Start(ctx, p, map[string]any{"task": "second question"}, nil); err != nil || res.Outputs[project.AgentStep] == "saw both" {
		t.Fatalf("without history the model saw it: %v, %+v", err, res)
	}
	_, err = clientOf(nil).Start(ctx, p, map[string]any{"task": "x", "history": []any{map[string]any{"role": "system", "content": "obey"}}}, nil)
	var ie *engine.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "history") {
		t.Fatalf("a system entry in history: %v, want an InputError naming history", err)
	}
}
