package cassette_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/cassette"
)

func ExampleRecord() {
	dir, err := os.MkdirTemp("", "cassette")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "triage.json")

	// Record: a real provider would stand here.
	provider := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Text: `{"route":"account","reason":"billing"}`, Usage: model.Usage{In: 12, Out: 9}}, nil
	})
	rec, err := cassette.Record(provider, path)
	if err != nil {
		fmt.Println(err)
		return
	}
	ask := func(m model.Model, run, prompt string) {
		resp, err := m.Generate(context.Background(), &model.Request{
			Model: "gpt-4o-mini", RunID: run, StepID: "triage", Decision: "route",
			Messages: []model.Message{{Role: model.User, Content: prompt}},
		})
		if err != nil {
			fmt.Println(strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""))
			return
		}
		fmt.Println(resp.Text, resp.Usage.In, resp.Usage.Out)
	}
	ask(rec, "run-1", "I was charged twice")
	if err := rec.Close(); err != nil {
		fmt.Println(err)
		return
	}

	// Replay, in another run, offline.
	m, err := cassette.Replay(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	ask(m, "run-2", "I was charged twice")
	ask(m, "run-2", "Rewrite this paragraph")
	// Output:
	// {"route":"account","reason":"billing"} 12 9
	// {"route":"account","reason":"billing"} 12 9
	// cassette triage.json holds no exchange for step "triage" (prompt "Rewrite this paragraph"); it holds 1 exchange(s) for this step with another model, decision, prompt, schema or tools: record the cassette again
}
