package rein_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/chattest"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

const (
	supportTask = "I was charged twice for order 1042"
	refundStep  = "agent/turn2/call1"
)

// supportAgent copies examples/support-agent and adds to its rein.yaml the
// model real: openai's gpt-4o-mini at baseURL, whose key is OPENAI_API_KEY.
func supportAgent(t *testing.T, baseURL string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "support")
	if err := os.CopyFS(dir, os.DirFS("examples/support-agent")); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "rein.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "models:\n  real: {provider: openai, model: gpt-4o-mini, base_url: %q}\n", baseURL+"/v1"); err != nil {
		t.Fatal(err)
	}
	return dir
}

func openaiKey(key string) func(string) string {
	return func(name string) string {
		if name == "OPENAI_API_KEY" {
			return key
		}
		return ""
	}
}

// parkedRefund starts the support agent with --model real and the key in
// a SQLite file; the run waits on the refund's approval.
func parkedRefund(t *testing.T) (st store.Store, runID string, calls *atomic.Int32) {
	t.Helper()
	srv := chattest.Turns(t, secretKey, chattest.SupportAgent...)
	p, err := project.LoadAgent(supportAgent(t, srv.URL), &project.LoadOptions{Model: "real", Getenv: openaiKey(secretKey)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err = openStore(ctx, filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	res, err := clientOf(&engine.Config{Store: st}).Start(ctx, p, map[string]any{"task": supportTask}, nil)
	if err != nil || res.Status != trace.RunWaiting || len(res.Pending) != 1 || res.Pending[0].StepID != refundStep {
		t.Fatalf("start: %v %+v", err, res)
	}
	return st, res.RunID, &srv.Calls
}

func keyRuns(t *testing.T, st store.Store, key string) *rein.Client {
	t.Helper()
	r, err := loadClient(st, &project.LoadOptions{Getenv: openaiKey(key)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wantNeedsKey checks that err refuses a resume for want OPENAI_API_KEY,
// and that run is as it was: not failed, nothing called.
func wantNeedsKey(t *testing.T, what string, err error, st store.Store, runID, outbox string) {
	t.Helper()
	h := wantErr(t, what, err, fault.Business, fault.HintNeedsAPIKey)
	if h.RunID != runID || !slices.Equal(h.Env, []string{"OPENAI_API_KEY"}) ||
		!strings.Contains(err.Error(), "set the environment variable OPENAI_API_KEY") || !strings.Contains(err.Error(), "step agent") {
		t.Fatalf("%s: hint %+v, error %v", what, h, err)
	}
	run, gerr := st.GetRun(context.Background(), runID)
	if gerr != nil || run.Finished() || run.LeaseOwner != "" {
		t.Fatalf("%s: the run changed: %v %+v", what, gerr, run)
	}
	if sent, _ := os.ReadDir(outbox); len(sent) != 0 {
		t.Fatalf("%s: the refund ran: %v", what, sent)
	}
}

// A resume that could not call its model is refused before anything
// runs, naming the variable to set: the approved refund waits, the run is
// not failed, and it goes on once the key is there.
func TestResumeWithoutAModelKeyIsRefused(t *testing.T) {
	outbox := t.TempDir()
	t.Setenv("REIN_OUTBOX", outbox)
	st, runID, calls := parkedRefund(t)
	ctx := context.Background()
	noKey := keyRuns(t, st, "")

	out, err := noKey.Decide(ctx, runID, refundStep, rein.Decision{Status: store.ApprovalApproved, By: "ops"}, &rein.DecideOptions{Resume: true})
	wantNeedsKey(t, "approve and resume", err, st, runID, outbox)
	if out == nil || out.Approval == nil || out.Approval.Status != store.ApprovalApproved || out.Result != nil ||
		!strings.Contains(err.Error(), "the decision is recorded") {
		t.Fatalf("outcome %+v, error %v: want the decision recorded and no resume", out, err)
	}
	_, err = noKey.Resume(ctx, runID, nil)
	wantNeedsKey(t, "resume", err, st, runID, outbox)
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d model calls, want the 2 of the first run", n)
	}

	res, err := keyRuns(t, st, secretKey).Resume(ctx, runID, nil)
	if err != nil || res.Result.Status != trace.RunSucceeded {
		t.Fatalf("resume with the key: %v %+v", err, res)
	}
	if sent, _ := os.ReadDir(outbox); len(sent) != 1 {
		t.Fatalf("outbox %v: want the one approved refund", sent)
	}
}

// A worker without the key leaves the run as it was (logged, leased until
// its lease expires); a worker with it finishes the run. Work resumes
// through Runs, so it refuses as Runs.Resume does.
func TestWorkerWithoutAModelKeyLeavesTheRun(t *testing.T) {
	outbox := t.TempDir()
	t.Setenv("REIN_OUTBOX", outbox)
	st, runID, _ := parkedRefund(t)
	ctx := context.Background()
	if _, err := keyRuns(t, st, "").Decide(ctx, runID, refundStep, rein.Decision{Status: store.ApprovalApproved, By: "ops"}, nil); err != nil {
		t.Fatal(err)
	}

	logged := make(chan string, 16)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- runWorker(wctx, st, &workOpts{Owner: "keyless", Poll: time.Hour,
			Load: &project.LoadOptions{Getenv: openaiKey("")},
			Logf: func(format string, args ...any) {
				select {
				case logged <- fmt.Sprintf(format, args...):
				default: // the test reads the first lines only
				}
			}})
	}()
	var outcome string // the first line after "advancing"
	for outcome = range logged {
		if !strings.HasSuffix(outcome, ": advancing") {
			break
		}
	}
	stop()
	if !strings.Contains(outcome, "set the environment variable OPENAI_API_KEY") || !strings.Contains(outcome, "cannot resume") {
		t.Fatalf("the keyless worker logged %q", outcome)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	run, err := st.GetRun(ctx, runID)
	if err != nil || run.Finished() {
		t.Fatalf("after the keyless worker: %v %+v", err, run)
	}
	if sent, _ := os.ReadDir(outbox); len(sent) != 0 {
		t.Fatalf("the keyless worker ran the refund: %v", sent)
	}
	// as if its lease had expired: it holds the run until then.
	if err := st.ReleaseLease(ctx, runID, "keyless"); err != nil {
		t.Fatal(err)
	}

	finished := make(chan string, 16)
	wctx, stop = context.WithCancel(ctx)
	defer stop()
	go func() {
		done <- runWorker(wctx, st, &workOpts{Owner: "keyed", Poll: time.Millisecond,
			Load: &project.LoadOptions{Getenv: openaiKey(secretKey)},
			Logf: func(format string, args ...any) {
				if line := fmt.Sprintf(format, args...); strings.Contains(line, string(trace.RunSucceeded)) {
					select {
					case finished <- line:
					default:
					}
				}
			}})
	}()
	<-finished
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	run, err = st.GetRun(ctx, runID)
	if err != nil || run.Status != trace.RunSucceeded {
		t.Fatalf("after the keyed worker: %v %+v", err, run)
	}
	if sent, _ := os.ReadDir(outbox); len(sent) != 1 {
		t.Fatalf("outbox %v: want the one approved refund", sent)
	}
}

// Only the models the run may still call are opened: a settled step's
// model needs no key to resume; a model whose rein.yaml entry does not
// open (not for a key) refuses the resume as a flow that does not load.
func TestResumeOpensTheModelsLeft(t *testing.T) {
	t.Parallel()
	srv := chattest.Turns(t, secretKey, `{"role":"assistant","content":"{\"ok\": true}"}`)
	cfg := fmt.Sprintf("models:\n  real: {provider: openai, model: gpt-4o-mini, base_url: %q}\n  local: {provider: ollama, model: m, base_url: \"localhost:11434\"}\n", srv.URL+"/v1")
	ctx := context.Background()
	st, err := openStore(ctx, filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// start starts flow with the key; it waits on review.
	start := func(flow string) string {
		t.Helper()
		dir := writeFlowDir(t, flow)
		if err := os.WriteFile(filepath.Join(dir, "rein.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := project.Load(dir, &project.LoadOptions{Getenv: openaiKey(secretKey)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := clientOf(&engine.Config{Store: st}).Start(ctx, p, map[string]any{"name": "Ann"}, nil)
		if err != nil || res.Status != trace.RunWaiting {
			t.Fatalf("start: %v %+v", err, res)
		}
		return res.RunID
	}
	approve := rein.Decision{Status: store.ApprovalApproved, By: "ops"}
	noKey := keyRuns(t, st, "")

	done := start(`name: drafted
steps:
  - {id: draft, model: real, prompt_template: "Draft for {input.name}", output_schema: {type: object}}
  - {id: review, type: approval, message: "send it?"}
`)
	out, err := noKey.Decide(ctx, done, "review", approve, &rein.DecideOptions{Resume: true})
	if err != nil || out.Result.Status != trace.RunSucceeded {
		t.Fatalf("the drafted run needs no key any more: %v %+v", err, out)
	}

	broken := start(`name: broken
steps:
  - {id: review, type: approval, message: "ask?"}
  - {id: ask, model: local, prompt_template: "Ask {input.name}", output_schema: {type: object}}
`)
	_, err = noKey.Resume(ctx, broken, nil)
	h := wantErr(t, "resume with a model that does not open", err, fault.Format, fault.HintFlowDoesNotLoad)
	if h.RunID != broken || !strings.Contains(err.Error(), "step ask (model local): ") || !strings.Contains(err.Error(), "not an http(s) URL") {
		t.Fatalf("hint %+v, error %v", h, err)
	}
	if run, err := st.GetRun(ctx, broken); err != nil || run.Status != trace.RunWaiting {
		t.Fatalf("the broken run changed: %v %+v", err, run)
	}
}
