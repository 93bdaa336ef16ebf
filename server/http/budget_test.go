package http_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
)

// A tenant's runs reserve their model calls in the store's budget
// ledger: acme's 500 tokens a day (rein.yaml budgets:) take two runs of
// 150 tokens and refuse the third's reservation of ~220 with a budget
// error naming the budget; globex, with no budget, is not limited, and
// /metrics shows the day's spend.
func TestTenantBudgetStopsRun(t *testing.T) {
	e := newEnv(t, envOpts{tokens: true, dirs: []string{"testdata/budget"}})
	acme := e.token("alice", "acme", "run", "read")
	globex := e.token("gus", "globex", "run")
	admin := e.token("root", "acme", "admin")
	in := map[string]any{"flow": "summarise", "input": map[string]any{"text": "a long text"}}
	for i := range 2 {
		if s := e.start(acme, in); s.Status != "succeeded" {
			t.Fatalf("acme's run %d is %s, want succeeded within its budget", i+1, s.Status)
		}
	}
	s := e.start(acme, in)
	if s.Status != "failed" {
		t.Fatalf("acme's third run is %s, want failed past its budget", s.Status)
	}
	v := e.waitStatus(acme, s.RunID, "failed")
	var runErr struct {
		Class   string `json:"class"`
		Budget  string `json:"budget"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(v.Run.Error, &runErr); err != nil {
		t.Fatalf("the run's error %s: %v", v.Run.Error, err)
	}
	if runErr.Class != "budget" {
		t.Errorf("the run's error class is %q, want budget: %s", runErr.Class, v.Run.Error)
	}
	for _, want := range []string{"tokens_per_day", "acme", store.DayOf(time.Now()), "limit 500", "used 300"} {
		if !strings.Contains(string(v.Run.Error), want) {
			t.Errorf("the run's error does not name %q: %s", want, v.Run.Error)
		}
	}
	if attempts := v.Steps[0].Attempt; attempts != 1 {
		t.Errorf("the step was tried %d times: a budget error is not retried", attempts)
	}
	for i := range 3 {
		if s := e.start(globex, in); s.Status != "succeeded" {
			t.Fatalf("globex's run %d is %s: globex has no budget", i+1, s.Status)
		}
	}
	m := e.do("GET", "/metrics", admin, nil)
	for _, want := range []string{`rein_budget_tokens_today{tenant="acme"} 300`, `rein_budget_cost_today{tenant="acme"} 0.0021`} {
		if !strings.Contains(string(m.body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
