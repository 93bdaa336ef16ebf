package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/trace"
)

const budgetFlow = `name: summarise
steps:
  - {id: write, type: llm, model: writer, prompt_template: "Summarise the day"}
`

// budgetEngine is an engine whose model writer (priced, max_tokens 200)
// is m, under a tenant limit of 1000 tokens a day for acme.
func budgetEngine(t testing.TB, st store.Store, m model.Model, clock engine.Clock) (*engine.Engine, *flow.Flow) {
	t.Helper()
	f, err := flow.Parse([]byte(budgetFlow), "budget.yaml", &flow.Options{Models: func(n string) bool { return n == "writer" }})
	if err != nil {
		t.Fatal(err)
	}
	reg := &model.Registry{}
	reg.Register("writer", m)
	sp := &engine.Spend{
		Models:  map[string]*flow.ModelDecl{"writer": {Name: "writer", MaxTokens: 200, Price: &flow.PriceDecl{InputPerMTok: 3, OutputPerMTok: 15}}},
		Budgets: &flow.BudgetsDecl{Tenants: map[string]*flow.LimitDecl{"acme": {TokensPerDay: 1000}}},
	}
	return engine.New(engine.Config{Models: reg, Store: st, Spend: sp, Clock: clock}), f
}

// TestBudgetCrashChild is the child of TestBudgetCrashReleases: its model
// call dies by SIGKILL once the engine reserved its budget.
func TestBudgetCrashChild(t *testing.T) {
	if os.Getenv("REIN_BUDGET_CRASH") == "" {
		t.Skip("the child process of TestBudgetCrashReleases")
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(os.Getenv("REIN_CRASH_DIR"), "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	die := model.Func(func(context.Context, *model.Request) (*model.Response, error) {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	})
	e, f := budgetEngine(t, st, die, nil)
	_, err = e.Run(context.Background(), f, nil, &engine.RunOptions{RunID: os.Getenv("REIN_BUDGET_CRASH"), Tenant: "acme"})
	t.Fatalf("the child was meant to die in its model call, but its run returned (%v)", err)
}

// A process killed (SIGKILL) during a model call leaves its reservation
// open. A resume releases it before it calls the model again under the
// same key, so the day counts the call once, at what it used; a cancel
// releases it too. No leaked reservation, no double count.
func TestBudgetCrashReleases(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	ctx := context.Background()
	day := store.DayOf(time.Now())
	spend := func(t *testing.T, st store.Store) store.Spend {
		t.Helper()
		all, err := st.Spend(ctx, day, "acme")
		if err != nil || len(all) != 1 {
			t.Fatalf("Spend = %v, %v", all, err)
		}
		return *all[0]
	}
	crashed := func(t *testing.T, runID string) store.Store {
		_, st := killedChild(t, "TestBudgetCrashChild", "REIN_BUDGET_CRASH="+runID)
		if sp := spend(t, st); sp.Open != 1 || sp.ReservedTokens <= 200 {
			t.Fatalf("after the crash: %+v, want one open reservation of more than the 200 output tokens", sp)
		}
		return st
	}
	t.Run("resume", func(t *testing.T) {
		t.Parallel()
		st := crashed(t, "budget-resume")
		var calls int
		answer := model.Func(func(context.Context, *model.Request) (*model.Response, error) {
			calls++
			return &model.Response{Text: "done", Usage: model.Usage{In: 100, Out: 50}}, nil
		})
		e, f := budgetEngine(t, st, answer, pastLease(t, st, "budget-resume"))
		res, err := e.Resume(ctx, f, "budget-resume")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != trace.RunSucceeded || calls != 1 {
			t.Fatalf("after the resume: %s (%+v), %d model calls; want succeeded with one", res.Status, res.Error, calls)
		}
		if sp := spend(t, st); sp.Open != 0 || sp.Tokens != 150 || sp.Cost != 100*3+50*15 {
			t.Errorf("after the resume: %+v, want 150 tokens and 1050 micro-units settled, none open", sp)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		st := crashed(t, "budget-cancel")
		e, _ := budgetEngine(t, st, model.Func(func(context.Context, *model.Request) (*model.Response, error) {
			t.Error("a cancelled run called its model")
			return nil, nil
		}), pastLease(t, st, "budget-cancel"))
		if err := e.Cancel(ctx, "budget-cancel", "over budget"); err != nil {
			t.Fatal(err)
		}
		if sp := spend(t, st); sp.Open != 0 || sp.Tokens != 0 || sp.Cost != 0 {
			t.Errorf("after the cancel: %+v, want nothing counted, none open", sp)
		}
	})
}
