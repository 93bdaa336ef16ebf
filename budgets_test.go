package rein_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// A run started without a tenant (rein run, a library program) has the
// default: budget of its rein.yaml, kept in the Client's store: of 400
// tokens a day, two runs use 150 each, and the third's reservation (~10
// prompt tokens + max_tokens 100) would pass the limit, so it fails with
// a budget error naming the default tenant.
func TestDefaultBudgetLimitsRunsWithoutTenant(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"rein.yaml": "models:\n  writer: {provider: ollama, model: llama3.2, max_tokens: 100, price: {input_per_mtok: 1, output_per_mtok: 2}}\n" +
			"budgets:\n  default: {tokens_per_day: 400}\n",
		"flow.yaml":   "name: summarise\nsteps:\n  - {id: write, type: llm, model: writer, prompt_template: \"Summarise the day\"}\n",
		"script.yaml": strings.Repeat("- {step: write, raw: \"done\", tokens: {in: 100, out: 50}}\n", 6),
	}
	files["script.yaml"] = "replies:\n" + strings.ReplaceAll(files["script.yaml"], "- {", "  - {")
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "rein.db")
	c, err := rein.Open(ctx, rein.Config{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var statuses []trace.RunStatus
	var last *rein.Result
	for range 3 {
		p, err := project.Load(dir, &project.LoadOptions{Script: filepath.Join(dir, "script.yaml")}) // answers every model name
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Run(ctx, p, nil)
		p.Close()
		if err != nil {
			t.Fatal(err)
		}
		statuses, last = append(statuses, res.Status), res
	}
	if statuses[0] != trace.RunSucceeded || statuses[1] != trace.RunSucceeded || statuses[2] != trace.RunFailed {
		t.Fatalf("statuses %v, want succeeded, succeeded, failed", statuses)
	}
	if last.Error == nil || last.Error.Class != fault.Budget || !strings.Contains(last.Error.Message, "tokens_per_day of tenant (default)") {
		t.Errorf("the third run's error: %+v", last.Error)
	}
	spend, err := c.Store().Spend(ctx, store.DayOf(time.Now()), "")
	if err != nil || len(spend) != 1 || spend[0].Tenant != "" || spend[0].Tokens != 300 || spend[0].Cost != 2*(100+100) || spend[0].Open != 0 {
		t.Errorf("spend = %+v, %v; want the default tenant's 300 tokens, 400 micro-units, none open", spend, err)
	}
}
