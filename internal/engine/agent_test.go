package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

const agentFlow = `name: support
inputs: {type: object, properties: {task: {type: string}}}
steps:
  - id: support
    type: agent
    model: m
    instructions: Help with orders.
    prompt_template: "{input.task}"
    tools: {status: , charge: , refund: {approval: required}}
`

// agentTurns answers turn n with replies[n-1], logging each request's turn
// to dir/model.log, and kills the process when kill names the turn.
func agentTurns(dir, kill string, replies ...model.Response) model.Model {
	return model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		f, err := os.OpenFile(filepath.Join(dir, "model.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(f, "turn%d\n", req.Turn)
		f.Close()
		if kill == fmt.Sprintf("model:%d", req.Turn) {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		if req.Turn < 1 || req.Turn > len(replies) {
			return nil, fmt.Errorf("no reply for turn %d", req.Turn)
		}
		r := replies[req.Turn-1]
		return &r, nil
	})
}

// agentTools log each call's key to dir/<tool>.log; kill names the tool
// during whose call the process dies.
func agentTools(dir, kill string) *tool.Registry {
	reg := &tool.Registry{}
	mk := func(name string, idempotent bool) tool.Tool {
		schema := json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]}`)
		return tool.Func(tool.Spec{Name: name, Effect: tool.EffectWrite, Idempotent: idempotent, InputSchema: schema},
			func(ctx context.Context, args any) (any, error) {
				f, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(f, "%s %s\n", tool.CallInfoFrom(ctx).IdempotencyKey, args.(map[string]any)["order"])
				f.Close()
				if kill == "during:"+name {
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {}
				}
				return map[string]any{"tool": name, "order": args.(map[string]any)["order"]}, nil
			})
	}
	for _, t := range []tool.Tool{mk("status", true), mk("charge", false), mk("refund", false)} {
		if err := reg.Register(t); err != nil {
			panic(err)
		}
	}
	return reg
}

func call(id, name, args string) model.ToolCall {
	return model.ToolCall{ID: id, Name: name, Args: args}
}

// agentScript: turn 1 looks up the order and charges it, turn 2 refunds
// (approval: required), turn 3 answers.
var agentScript = []model.Response{
	{ToolCalls: []model.ToolCall{call("a", "status", `{"order":"1042"}`), call("b", "charge", `{"order":"1042"}`)}},
	{ToolCalls: []model.ToolCall{call("c", "refund", `{"order":"1042"}`)}},
	{Text: "refunded order 1042"},
}

func agentEngine(t testing.TB, dir string, st store.Store, kill string) (*engine.Engine, *flow.Flow) {
	return agentEngineAt(t, dir, st, kill, nil)
}

// agentEngineAt is agentEngine on clock (nil: the wall clock).
func agentEngineAt(t testing.TB, dir string, st store.Store, kill string, clock engine.Clock) (*engine.Engine, *flow.Flow) {
	reg := agentTools(dir, kill)
	models := &model.Registry{}
	models.Register("m", agentTurns(dir, kill, agentScript...))
	f, err := flow.Parse([]byte(agentFlow), "support.yaml", &flow.Options{
		Tools:  specsOf(reg),
		Models: func(string) bool { return true },
	})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Tools: reg, Models: models, Store: st, Clock: clock}), f
}

var agentInput = map[string]any{"task": "I was charged twice for order 1042"}

func TestAgentStepWaitsForApprovalAcrossProcesses(t *testing.T) {
	t.Parallel()
	for _, verdict := range []store.ApprovalStatus{store.ApprovalApproved, store.ApprovalRejected} {
		t.Run(string(verdict), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			st := openSQLite(t)
			e, f := agentEngine(t, dir, st, "")
			res, err := e.Run(ctx, f, agentInput, &engine.RunOptions{RunID: "r"})
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res, trace.RunWaiting)
			if len(res.Pending) != 1 {
				t.Fatalf("pending %+v", res.Pending)
			}
			p := res.Pending[0]
			if p.StepID != "support/turn2/call1" || p.Tool != "refund" || string(p.Args) != `{"order":"1042"}` {
				t.Fatalf("the approval does not record the exact call: %+v", p)
			}
			if got := readLines(t, filepath.Join(dir, "refund.log")); len(got) != 0 {
				t.Fatalf("refund ran before approval: %v", got)
			}
			if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: p.StepID, Status: verdict, Comment: "already refunded"}); err != nil {
				t.Fatal(err)
			}
			// another process: a fresh engine, model and tools over the same store
			e2, f2 := agentEngine(t, dir, st, "")
			res, err = e2.Resume(ctx, f2, "r")
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res, trace.RunSucceeded)
			if res.Outputs["support"] != "refunded order 1042" {
				t.Errorf("output %v", res.Outputs["support"])
			}
			if got := strings.Join(readLines(t, filepath.Join(dir, "model.log")), " "); got != "turn1 turn2 turn3" {
				t.Errorf("model asked for %s: a committed turn was asked again", got)
			}
			refunds := readLines(t, filepath.Join(dir, "refund.log"))
			if verdict == store.ApprovalApproved && (len(refunds) != 2 || refunds[0] != "r/support/1/turn2/call1" || refunds[1] != "1042") {
				t.Errorf("approved refund calls: %v", refunds)
			}
			if verdict == store.ApprovalRejected && len(refunds) != 0 {
				t.Errorf("a rejected call ran: %v", refunds)
			}
			if got := readLines(t, filepath.Join(dir, "charge.log")); len(got) != 2 {
				t.Errorf("charge calls %v, want one", got)
			}
			if verdict == store.ApprovalRejected {
				evs, err := st.Events(ctx, "r", 0, 1000)
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, ev := range evs {
					found = found || strings.Contains(agentCallData(t, ev), "rejected by a person: already refunded")
				}
				if !found {
					t.Error("the rejection did not reach the transcript")
				}
			}
		})
	}
}

func TestAgentStepWithApprovalNeedsADurableStore(t *testing.T) {
	t.Parallel()
	e, f := agentEngine(t, t.TempDir(), nil, "")
	_, err := e.Run(context.Background(), f, agentInput, nil)
	if err == nil || !strings.Contains(err.Error(), "agent step support has tool refund with approval: required, which needs a durable store") {
		t.Fatalf("want a refusal, got %v", err)
	}
}

// TestAgentCrashChild is the child of TestAgentCrashAndResume.
func TestAgentCrashChild(t *testing.T) {
	at := os.Getenv("REIN_AGENT_CRASH_AT")
	if at == "" {
		t.Skip("the agent crash test's child process")
	}
	dir := os.Getenv("REIN_CRASH_DIR")
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, f := agentEngine(t, dir, st, at)
	_, err = e.Run(context.Background(), f, agentInput, &engine.RunOptions{RunID: "crash-run"})
	t.Fatalf("the child was meant to die at %s, but its run returned (%v)", at, err)
}

func TestAgentCrashAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	cases := []struct {
		at string
		// model turns asked over both processes, and calls per tool
		model   string
		charges int
		unknown bool
	}{
		// killed while the model was asked for turn 2: turn 1 and its calls
		// are committed and not repeated; turn 2 is asked again.
		{"model:2", "turn1 turn2 turn2 turn3", 1, false},
		// killed inside charge (not idempotent): it is unknown and waits
		// for a person; nothing is asked or called again.
		{"during:charge", "turn1 turn2 turn3", 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.at, func(t *testing.T) {
			t.Parallel()
			dir, st := killedChild(t, "TestAgentCrashChild", "REIN_AGENT_CRASH_AT="+tc.at)
			ctx := context.Background()
			e, f := agentEngineAt(t, dir, st, "", pastLease(t, st, "crash-run"))
			res, err := e.Resume(ctx, f, "crash-run")
			if err != nil {
				t.Fatal(err)
			}
			if tc.unknown {
				wantStatus(t, res, trace.RunWaiting)
				if len(res.Pending) != 1 || res.Pending[0].StepID != "support/turn1/call2" || res.Pending[0].Kind != store.KindUnknown {
					t.Fatalf("pending %+v, want the charge as unknown", res.Pending)
				}
				if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "crash-run", StepID: "support/turn1/call2",
					Status: store.ApprovalSettled, Output: json.RawMessage(`{"charged":true}`)}); err != nil {
					t.Fatal(err)
				}
				if res, err = e.Resume(ctx, f, "crash-run"); err != nil {
					t.Fatal(err)
				}
			}
			// the refund waits for approval either way
			wantStatus(t, res, trace.RunWaiting)
			if len(res.Pending) != 1 || res.Pending[0].StepID != "support/turn2/call1" {
				t.Fatalf("pending %+v", res.Pending)
			}
			if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "crash-run", StepID: "support/turn2/call1", Status: store.ApprovalApproved}); err != nil {
				t.Fatal(err)
			}
			if res, err = e.Resume(ctx, f, "crash-run"); err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res, trace.RunSucceeded)
			if got := strings.Join(readLines(t, filepath.Join(dir, "model.log")), " "); got != tc.model {
				t.Errorf("model turns asked: %s, want %s", got, tc.model)
			}
			if got := readLines(t, filepath.Join(dir, "charge.log")); len(got) != 2*tc.charges {
				t.Errorf("charge calls %v, want %d", got, tc.charges)
			}
			if got := readLines(t, filepath.Join(dir, "status.log")); len(got) < 2 || got[0] != "crash-run/support/1/turn1/call1" {
				t.Errorf("status calls %v", got)
			}
		})
	}
}

// TestAgentStepCommitsOncePerTurnAndCall: each further turn with one call
// costs exactly two commits on SQLite (the turn, the call's outcome).
func TestAgentStepCommitsOncePerTurnAndCall(t *testing.T) {
	t.Parallel()
	commits := func(turns int) int {
		replies := make([]model.Response, turns+1)
		for i := range turns {
			replies[i] = model.Response{ToolCalls: []model.ToolCall{call("a", "status", `{"order":"1"}`)}}
		}
		replies[turns] = model.Response{Text: "done"}
		dir := t.TempDir()
		reg := agentTools(dir, "")
		models := &model.Registry{}
		models.Register("m", agentTurns(dir, "", replies...))
		f, err := flow.Parse([]byte("name: c\nsteps:\n  - {id: a, type: agent, model: m, prompt_template: go, tools: {status: }}\n"), "c.yaml",
			&flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
		if err != nil {
			t.Fatal(err)
		}
		cs := &countingStore{Store: openSQLite(t)}
		res, err := engine.New(engine.Config{Tools: reg, Models: models, Store: cs}).Run(context.Background(), f, nil, nil)
		if err != nil || res.Status != trace.RunSucceeded {
			t.Fatalf("%v %+v", err, res)
		}
		return cs.commits
	}
	two, five := commits(2), commits(5)
	if five-two != 3*2 {
		t.Errorf("3 more turns with one call each cost %d commits, want 6 (2 turns: %d, 5 turns: %d)", five-two, two, five)
	}
}

// TestAgentStepKeepsAHugeObservationOutOfTheTranscript: the model sees a
// bounded preview; the whole observation is the call's record.
func TestAgentStepKeepsAHugeObservationOutOfTheTranscript(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	huge := strings.Repeat("0123456789", 50000) // 500 KB
	dump := tool.Func(tool.Spec{Name: "dump", Effect: tool.EffectRead, Idempotent: true}, func(context.Context, any) (any, error) {
		return huge, nil
	})
	reg := &tool.Registry{}
	if err := reg.Register(dump); err != nil {
		t.Fatal(err)
	}
	var seen int
	models := &model.Registry{}
	models.Register("m", model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Turn == 1 {
			return &model.Response{ToolCalls: []model.ToolCall{call("a", "dump", `{}`)}}, nil
		}
		for _, m := range req.Messages {
			seen += len(m.Content)
		}
		return &model.Response{Text: "done"}, nil
	}))
	f, err := flow.Parse([]byte("name: h\nsteps:\n  - {id: a, type: agent, model: m, prompt_template: go, tools: {dump: }, max_observation_bytes: 2000}\n"), "h.yaml",
		&flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	st := openSQLite(t)
	res, err := engine.New(engine.Config{Tools: reg, Models: models, Store: st}).Run(ctx, f, nil, &engine.RunOptions{RunID: "h"})
	if err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("%v %+v", err, res)
	}
	if seen > 2500 {
		t.Errorf("the model was sent %d bytes after a 500 KB observation", seen)
	}
	turns, err := engine.AgentTranscript(ctx, st, "h", "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	obs := turns[0].Calls[0]
	if len(obs.Observation) > 2200 || !strings.HasPrefix(obs.Blob, "sha256:") || !strings.Contains(obs.Observation, "whole in blob "+obs.Blob) {
		t.Fatalf("observation %d bytes, blob %q", len(obs.Observation), obs.Blob)
	}
	calls, err := st.Calls(ctx, "h", "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].Turn != 1 || calls[0].Index != 1 || calls[0].Key != "h/a/1/turn1/call1" || len(calls[0].Output) != len(huge)+2 {
		t.Fatalf("call records %+v", calls)
	}
}

// TestAgentStepOutputFlowsDownstream: the final answer, valid under the
// step's output_schema, is the step's output, which later steps read.
func TestAgentStepOutputFlowsDownstream(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg := agentTools(dir, "")
	models := &model.Registry{}
	models.Register("m", model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		switch {
		case req.Turn == 1:
			return &model.Response{ToolCalls: []model.ToolCall{call("a", "status", `{"order":"1042"}`)}}, nil
		case req.Corrective:
			return &model.Response{Text: `{"order": "1042"}`}, nil
		}
		return &model.Response{Text: `{"order": 1042}`}, nil // breaks the schema: one corrective request
	}))
	src := `name: f
schemas:
  answer: {type: object, properties: {order: {type: string}}, required: [order], additionalProperties: false}
steps:
  - {id: support, type: agent, model: m, prompt_template: "look up 1042", tools: {status: }, output_schema: answer}
  - {id: after, tool: charge, args: {order: "{support.order}"}}
`
	f, err := flow.Parse([]byte(src), "f.yaml", &flow.Options{Tools: specsOf(reg),
		Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.New(engine.Config{Tools: reg, Models: models}).Run(context.Background(), f, nil, nil)
	if err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("%v %+v", err, res.Error)
	}
	if got := readLines(t, filepath.Join(dir, "charge.log")); len(got) != 2 || got[1] != "1042" {
		t.Errorf("downstream call %v", got)
	}
	if res.Steps["support"].Model.LLMCalls != 3 {
		t.Errorf("model calls %d, want 3 (two turns, one correction)", res.Steps["support"].Model.LLMCalls)
	}
}

// TestAgentArgsAreBounded: a call whose arguments are longer than
// max_args_bytes is refused before they are parsed, as an invalid call the
// model sees; neither what goes back to the model nor the journal holds
// them.
func TestAgentArgsAreBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := agentTools(t.TempDir(), "")
	huge := `{"order": "` + strings.Repeat("9", 3<<20) + `"}`
	var sent int
	var saw string
	models := &model.Registry{}
	models.Register("m", model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Turn == 1 {
			return &model.Response{ToolCalls: []model.ToolCall{call("a", "status", huge)}}, nil
		}
		for _, m := range req.Messages {
			sent += len(m.Content)
			for _, tc := range m.ToolCalls {
				sent += len(tc.Args)
			}
			if m.Role == model.Tool {
				saw = m.Content
			}
		}
		return &model.Response{Text: "done"}, nil
	}))
	f, err := flow.Parse([]byte("name: h\nsteps:\n  - {id: a, type: agent, model: m, prompt_template: go, tools: {status: }, max_args_bytes: 65536}\n"), "h.yaml",
		&flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	st := openSQLite(t)
	res, err := engine.New(engine.Config{Tools: reg, Models: models, Store: st}).Run(ctx, f, nil, &engine.RunOptions{RunID: "h"})
	if err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("%v %+v", err, res)
	}
	if !strings.Contains(saw, "more than max_args_bytes 65536") || sent > 8<<10 {
		t.Fatalf("the model saw %q, and was sent %d bytes after 3 MiB of arguments", saw, sent)
	}
	turns, err := engine.AgentTranscript(ctx, st, "h", "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if c := turns[0].Calls[0]; c.Status != "invalid" || len(c.Args) > 200 {
		t.Fatalf("the call is %s with %d bytes of arguments kept", c.Status, len(c.Args))
	}
	events, err := st.Events(ctx, "h", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if b, _ := json.Marshal(e); len(b) > 64<<10 {
			t.Fatalf("event %s holds %d bytes", e.Kind, len(b))
		}
	}
}
