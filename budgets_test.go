package rein_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/chattest"
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

// A sub-agent's model calls are the run's: priced by the price its own
// folder's rein.yaml gives its model (the calling agent's rein.yaml
// declares none), counted against the tenant's cost_per_day, and the
// refusal stops the calling agent too, not only the sub-run.
func TestSubAgentCostIsTheRuns(t *testing.T) {
	t.Parallel()
	var billingAsked atomic.Int32
	srv := chattest.Serve(t, "", func(req *chattest.Request) string {
		switch req.System() {
		case "You are billing.":
			billingAsked.Add(1)
			return chattest.Text("ch_2 duplicates ch_1.")
		case "You are triage.":
			if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
				return chattest.Text("Billing could not say.")
			}
			return chattest.Call("t1", "billing", `{"task":"Is order 1042 charged twice?"}`)
		}
		return ""
	})
	root := t.TempDir()
	model := "{provider: ollama, model: tiny, base_url: " + srv.URL + "/v1"
	files := map[string]string{
		"triage/agent.yaml":  "name: triage\nmodel: real\ninstructions: You are triage.\ntools:\n  billing: {agent: ../billing}\nexecute_plan: false\n",
		"triage/rein.yaml":   "models:\n  real: " + model + "}\nbudgets:\n  default: {cost_per_day: 50}\n",
		"billing/agent.yaml": "name: billing\nmodel: pricey\ninstructions: You are billing.\ntools: {}\nexecute_plan: false\n",
		"billing/rein.yaml":  "models:\n  pricey: " + model + ", max_tokens: 100, price: {input_per_mtok: 1000000, output_per_mtok: 1000000}}\n",
	}
	for name, text := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	c, err := rein.Open(ctx, rein.Config{DB: filepath.Join(t.TempDir(), "rein.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := project.LoadAgent(filepath.Join(root, "triage"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := c.Run(ctx, p, map[string]any{"task": "was I charged twice?"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunFailed || res.Error == nil || res.Error.Class != fault.Budget || !strings.Contains(res.Error.Message, "budget cost_per_day of tenant (default)") {
		t.Fatalf("run %s: %+v: the sub-agent's priced call passes cost_per_day", res.Status, res.Error)
	}
	if billingAsked.Load() != 0 {
		t.Errorf("billing's model was asked %d times: its reservation should have been refused", billingAsked.Load())
	}
}
