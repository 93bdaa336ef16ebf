package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

var updateReplay = flag.Bool("update-replay", false, "add the cases missing from testdata/replay, from runs of today's engine")

// replayDir holds the replay corpus: per case, the flow text a run pinned
// (NAME.flow.yaml), its journal as the store returns it (NAME.jsonl, one
// event a line) and the state the store's projections held at the end
// (NAME.golden.json).
const replayDir = "testdata/replay"

// replayState is what a run's journal must fold to: the store's
// projections of the run, its steps and its pending approvals.
type replayState struct {
	Run     trace.RunStatus            `json:"run"`
	Steps   map[string]replayStepState `json:"steps"`
	Pending []string                   `json:"pending,omitempty"` // "step:kind", sorted
}

type replayStepState struct {
	Status    trace.StepStatus `json:"status"`
	Attempts  int              `json:"attempts"`
	OutputSHA string           `json:"output_sha,omitempty"`
}

// replayCase drives one run (or several processes of one) on st and
// returns the run's id and flow text.
type replayCase struct {
	name string
	run  func(t *testing.T, st store.Store) (runID string, flowText []byte)
}

func replayCases() []replayCase {
	ctx := context.Background()
	plainRun := func(src string, input any, tools []tool.Tool, replies ...scripted.Reply) func(t *testing.T, st store.Store) (string, []byte) {
		return func(t *testing.T, st store.Store) (string, []byte) {
			fx := newFixture(t, tools...)
			fx.script(replies...)
			f := fx.parse(src)
			if _, err := durableEngine(fx, st, "p1").Run(ctx, f, input, &engine.RunOptions{RunID: "r"}); err != nil {
				t.Fatal(err)
			}
			return "r", f.Source
		}
	}
	failing := func(name string, failFirst int, err error) tool.Tool {
		c := newKeyCounter(name, false)
		c.fail = func(n int) error {
			if n <= failFirst {
				return err
			}
			return nil
		}
		return c
	}
	business := fault.BusinessErr(errors.New("card declined"))
	approvalFlow := "name: appr\nsteps:\n  - {id: draft, tool: a, args: {}}\n  - {id: ok, type: approval, message: \"send {draft.n}?\"}\n  - {id: send, tool: b, approval: required, args: {}}\n"
	// resumed runs src, then applies each decision and resumes the run
	// after it (each in a process of its own).
	resumed := func(src string, decisions ...func(st store.Store) error) func(t *testing.T, st store.Store) (string, []byte) {
		return func(t *testing.T, st store.Store) (string, []byte) {
			fx := newFixture(t, newKeyCounter("a", false), newKeyCounter("b", false))
			f := fx.parse(src)
			if _, err := durableEngine(fx, st, "p1").Run(ctx, f, nil, &engine.RunOptions{RunID: "r"}); err != nil {
				t.Fatal(err)
			}
			for k, decide := range decisions {
				if err := decide(st); err != nil {
					t.Fatal(err)
				}
				if _, err := durableEngine(fx, st, fmt.Sprintf("p%d", k+2)).Resume(ctx, f, "r"); err != nil {
					t.Fatal(err)
				}
			}
			return "r", f.Source
		}
	}
	decided := func(decisions ...func(st store.Store) error) func(t *testing.T, st store.Store) (string, []byte) {
		return resumed(approvalFlow, decisions...)
	}
	blocking := func(name string) tool.Tool {
		return tool.Func(tool.Spec{Name: name, Effect: tool.EffectNone, Idempotent: true}, func(ctx context.Context, _ any) (any, error) {
			<-ctx.Done()
			return nil, context.Cause(ctx)
		})
	}
	submitFlow := "name: sub\nsteps:\n  - {id: draft, tool: a, args: {}}\n  - {id: parse, skill: parse, output_schema: {type: object, required: [n], properties: {n: {type: number}}}}\n  - {id: next, tool: a, args: {x: \"{parse.n}\"}}\n"
	sourceFlow := "name: src\nsteps:\n  - {id: assign, adapter: assigner, skill: assign}\n  - {id: next, tool: a, args: {}}\n"
	// agentCase runs the agent step of agentFlow, which waits for the
	// approval of a refund, then applies each decision and resumes.
	agentCase := func(decisions ...func(st store.Store) error) func(t *testing.T, st store.Store) (string, []byte) {
		return func(t *testing.T, st store.Store) (string, []byte) {
			dir := t.TempDir()
			e, f := agentEngine(t, dir, st, "")
			if _, err := e.Run(ctx, f, agentInput, &engine.RunOptions{RunID: "r"}); err != nil {
				t.Fatal(err)
			}
			for _, decide := range decisions {
				if err := decide(st); err != nil {
					t.Fatal(err)
				}
				e, f = agentEngine(t, dir, st, "")
				if _, err := e.Resume(ctx, f, "r"); err != nil {
					t.Fatal(err)
				}
			}
			return "r", f.Source
		}
	}
	return []replayCase{
		{"tool_llm", plainRun("name: tl\nsteps:\n  - {id: fetch, tool: a, args: {q: \"{input.q}\"}}\n  - {id: sum, type: llm, model: m, prompt_template: \"sum {fetch.n}\"}\n",
			map[string]any{"q": "x"}, []tool.Tool{newKeyCounter("a", false)}, scripted.Reply{Step: "sum", Output: map[string]any{"text": "ok"}})},
		{"route_when", plainRun(`name: rw
steps:
  - {id: pick, type: route, text: "{input.text}", routes: [{name: refund, description: R, rules: [{prefix: "refund"}]}, {name: other, description: O, rules: [{prefix: "x"}]}], fallback_route: other}
  - {id: refund, tool: a, args: {}, when: "pick.route == 'refund'", requires: [pick]}
  - {id: other, tool: a, args: {}, when: "pick.route == 'other'", requires: [pick]}
  - {id: after_other, tool: a, args: {}, requires: [other]}
`, map[string]any{"text": "refund please"}, []tool.Tool{newKeyCounter("a", false)})},
		{"plan", plainRun("name: pl\nsteps:\n  - {id: pl, type: plan, model: m, goal: \"echo\", tools: [a]}\n", nil, []tool.Tool{newKeyCounter("a", true)},
			scripted.Reply{Step: "pl", Decision: "plan", Plan: map[string]any{"goal": "echo", "steps": []any{
				map[string]any{"id": "s1", "tool": "a", "args": map[string]any{}}}}})},
		{"for_each_skip", plainRun("name: fe\nsteps:\n  - {id: c, tool: flaky, for_each: \"input.xs\", args: {x: \"{item}\"}, on_error: skip, fallback_value: {v: 0}}\n",
			map[string]any{"xs": []any{1.0, 2.0, 3.0}}, []tool.Tool{failing("flaky", 1, business)})},
		{"repeat", plainRun("name: rp\nsteps:\n  - {id: g, tool: a, args: {}, repeat: {until: \"output.n >= 3\", max: 5}}\n", nil, []tool.Tool{newKeyCounter("a", false)})},
		{"fallback", plainRun("name: fb\nsteps:\n  - {id: pay, tool: broken, args: {}, on_error: fallback, fallback: {tool: a, args: {}}}\n  - {id: next, tool: a, args: {}}\n",
			nil, []tool.Tool{failing("broken", 9, business), newKeyCounter("a", false)})},
		{"skip_default", plainRun("name: sk\nsteps:\n  - {id: pay, tool: broken, args: {}, on_error: skip, fallback_value: {from: default}}\n  - {id: next, tool: a, args: {}}\n",
			nil, []tool.Tool{failing("broken", 9, business), newKeyCounter("a", false)})},
		{"retry_transient", plainRun("name: rt\nsteps:\n  - {id: get, tool: flaky, args: {}, retries: 3}\n", nil, []tool.Tool{failing("flaky", 2, errTransient)})},
		{"failed_business", plainRun("name: fl\nsteps:\n  - {id: pay, tool: broken, args: {}}\n  - {id: next, tool: a, args: {}}\n",
			nil, []tool.Tool{failing("broken", 9, business), newKeyCounter("a", false)})},
		{"when_skip", plainRun("name: ws\nsteps:\n  - {id: a1, tool: a, args: {}, when: \"input.go\"}\n  - {id: a2, tool: a, args: {x: \"{a1.n}\"}}\n  - {id: a3, tool: a, args: {}, requires: []}\n",
			map[string]any{"go": false}, []tool.Tool{newKeyCounter("a", false)})},
		{"budget", plainRun("name: bu\nbudgets: {max_llm_calls: 1}\nsteps:\n  - {id: one, type: llm, model: m, prompt_template: \"one\"}\n  - {id: two, type: llm, model: m, prompt_template: \"two\"}\n",
			nil, nil, scripted.Reply{Step: "one", Output: map[string]any{"t": "x"}}, scripted.Reply{Step: "two", Output: map[string]any{"t": "y"}})},
		{"escalate", plainRun("name: es\nsteps:\n  - {id: pay, tool: broken, args: {amount: 5}, on_error: escalate}\n", nil, []tool.Tool{failing("broken", 9, business)})},
		{"approval_waiting", decided()},
		{"approval_approved", decided(
			func(st store.Store) error { return approve(st, "ok", store.ApprovalApproved, "") },
			func(st store.Store) error { return approve(st, "send", store.ApprovalApproved, "") })},
		{"approval_settled", decided(
			func(st store.Store) error { return approve(st, "ok", store.ApprovalApproved, "") },
			func(st store.Store) error { return approve(st, "send", store.ApprovalSettled, `{"n": 7}`) })},
		{"approval_rejected", decided(func(st store.Store) error { return approve(st, "ok", store.ApprovalRejected, "") })},
		{"cancelled", func(t *testing.T, st store.Store) (string, []byte) {
			id, src := decided()(t, st)
			fx := newFixture(t)
			if err := durableEngine(fx, st, "p3").Cancel(ctx, id, "not needed"); err != nil {
				t.Fatal(err)
			}
			return id, src
		}},
		{"unknown_after_crash", interruptCase(false)},
		{"unknown_approved", interruptCase(false, func(st store.Store) error { return approve(st, "s", store.ApprovalApproved, "") })},
		{"idempotent_rerun", interruptCase(true)},
		{"escalate_approved", escalateCase(func(st store.Store) error { return approve(st, "pay", store.ApprovalApproved, "") })},
		{"escalate_rejected", escalateCase(func(st store.Store) error { return approve(st, "pay", store.ApprovalRejected, "") })},
		{"mandatory_skip", plainRun("name: ms\nsteps:\n  - {id: a1, tool: a, args: {}}\n  - {id: a2, tool: a, args: {}, when: \"a1.n > 5\", mandatory: true}\n",
			nil, []tool.Tool{newKeyCounter("a", false)})},
		{"policy_blocked", func(t *testing.T, st store.Store) (string, []byte) {
			fx := newFixture(t, newKeyCounter("a", false), newKeyCounter("b", false))
			f := fx.parse("name: pb\nsteps:\n  - {id: one, tool: a, args: {}}\n  - {id: two, tool: b, args: {}}\n")
			gate := gateFunc(func(_ context.Context, inv *safety.Invocation) (safety.Decision, error) {
				if inv.Tool.Name == "b" {
					return safety.Decision{Verdict: safety.Block, Reason: "b is not allowed"}, nil
				}
				return safety.Decision{Verdict: safety.Allow}, nil
			})
			e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Store: st, Owner: "p1", Gate: gate})
			if _, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: "r"}); err != nil {
				t.Fatal(err)
			}
			return "r", f.Source
		}},
		{"retries_exhausted", plainRun("name: rx\nsteps:\n  - {id: get, tool: flaky, args: {}, retries: 2}\n  - {id: next, tool: a, args: {}}\n",
			nil, []tool.Tool{failing("flaky", 9, errTransient), newKeyCounter("a", false)})},
		{"retried", func(t *testing.T, st store.Store) (string, []byte) {
			// failed on a transient error after an effect, then retried
			// (rein runs retry): get runs again at attempt 2.
			fx := newFixture(t, failing("flaky", 1, errTransient), newKeyCounter("a", false))
			f := fx.parse("name: rtd\nsteps:\n  - {id: one, tool: a, args: {}}\n  - {id: get, tool: flaky, args: {}, retries: 0}\n  - {id: next, tool: a, args: {}}\n")
			if _, err := durableEngine(fx, st, "p1").Run(ctx, f, nil, &engine.RunOptions{RunID: "r"}); err != nil {
				t.Fatal(err)
			}
			if _, err := durableEngine(fx, st, "p2").Retry(ctx, f, "r", ""); err != nil {
				t.Fatal(err)
			}
			return "r", f.Source
		}},
		{"retry_on_error", plainRun("name: ro\nsteps:\n  - {id: pay, tool: flaky, args: {}, on_error: retry, retries: 2}\n", nil, []tool.Tool{failing("flaky", 1, business)})},
		{"gate_failed", plainRun("name: gf\nsteps:\n  - {id: g, tool: a, args: {}, gate: \"output.n > 5\"}\n  - {id: next, tool: a, args: {}}\n", nil, []tool.Tool{newKeyCounter("a", false)})},
		{"when_error", plainRun("name: we\nsteps:\n  - {id: a1, tool: a, args: {}}\n  - {id: a2, tool: a, args: {}, when: \"a1.n.deeper > 1\"}\n", nil, []tool.Tool{newKeyCounter("a", false)})},
		{"for_each_failed", plainRun("name: ff\nsteps:\n  - {id: c, tool: flaky, for_each: \"input.xs\", args: {x: \"{item}\"}, concurrency: 1}\n",
			map[string]any{"xs": []any{1.0, 2.0, 3.0}}, []tool.Tool{failing("flaky", 1, business)})},
		{"fallback_failed", plainRun("name: fbf\nsteps:\n  - {id: pay, tool: broken, args: {}, on_error: fallback, fallback: {tool: broken2, args: {}}}\n",
			nil, []tool.Tool{failing("broken", 9, business), failing("broken2", 9, business)})},
		{"max_iterations", plainRun("name: mi\nmax_iterations: 2\nsteps:\n  - {id: g, tool: a, args: {}, repeat: {until: \"output.n >= 5\", max: 5}}\n", nil, []tool.Tool{newKeyCounter("a", false)})},
		{"step_timeout", plainRun("name: st\nsteps:\n  - {id: slow, tool: wait, args: {}, timeout: 20ms, retries: 1}\n", nil, []tool.Tool{blocking("wait")})},
		{"run_timeout", plainRun("name: rto\nbudgets: {timeout: 50ms}\nsteps:\n  - {id: one, tool: a, args: {}}\n  - {id: slow, tool: wait, args: {}}\n", nil, []tool.Tool{newKeyCounter("a", false), blocking("wait")})},
		{"submit_waiting", resumed(submitFlow)},
		{"submit_settled", resumed(submitFlow, func(st store.Store) error { return approve(st, "parse", store.ApprovalSettled, `{"n": 3}`) })},
		{"submit_refused", resumed(submitFlow, func(st store.Store) error { return approve(st, "parse", store.ApprovalSettled, `{"m": 3}`) })},
		{"source_rejected", resumed(sourceFlow, func(st store.Store) error { return approve(st, "assign", store.ApprovalRejected, "") })},
		{"agent_waiting", agentCase()},
		{"agent_approved", agentCase(func(st store.Store) error { return approve(st, "support/turn2/call1", store.ApprovalApproved, "") })},
		{"agent_rejected", agentCase(func(st store.Store) error { return approve(st, "support/turn2/call1", store.ApprovalRejected, "") })},
		// journal version 4: the agent's turns as typed records (Event.AgentTurn)
		{"agent_turn_record", agentCase(func(st store.Store) error { return approve(st, "support/turn2/call1", store.ApprovalApproved, "") })},
		// the scheduling of items, rounds and plan steps (the commands goldens)
		{"for_each_fallback", plainRun("name: fef\nsteps:\n  - {id: c, tool: flaky, for_each: \"input.xs\", args: {x: \"{item}\"}, concurrency: 2, on_error: fallback, fallback: {tool: a, args: {}}}\n  - {id: next, tool: a, args: {}}\n",
			map[string]any{"xs": []any{1.0, 2.0, 3.0}}, []tool.Tool{failing("flaky", 1, business), newKeyCounter("a", false)})},
		{"repeat_rounds", plainRun("name: rr\nsteps:\n  - {id: g, tool: a, args: {}, repeat: {until: \"output.n >= 2\", max: 4}}\n  - {id: next, tool: a, args: {x: \"{g.n}\"}}\n", nil, []tool.Tool{newKeyCounter("a", false)})},
		{"plan_dag", plainRun("name: pd\nsteps:\n  - {id: pl, type: plan, model: m, goal: \"fan in\", tools: [a]}\n", nil, []tool.Tool{newKeyCounter("a", true)},
			scripted.Reply{Step: "pl", Decision: "plan", Plan: map[string]any{"goal": "fan in", "steps": []any{
				map[string]any{"id": "s1", "tool": "a", "args": map[string]any{}},
				map[string]any{"id": "s2", "tool": "a", "args": map[string]any{}},
				map[string]any{"id": "s3", "tool": "a", "args": map[string]any{}, "depends_on": []any{"s1", "s2"}}}}})},
	}
}

// interruptCase runs a flow whose second step is interrupted (as by Ctrl-C)
// while its tool runs, resumes it in another process, then applies each
// decision and resumes again. The tool blocks on its first call only.
func interruptCase(idempotent bool, decisions ...func(st store.Store) error) func(t *testing.T, st store.Store) (string, []byte) {
	return func(t *testing.T, st store.Store) (string, []byte) {
		ctx := context.Background()
		started := make(chan struct{}, 1)
		var calls atomic.Int32
		send := tool.Func(tool.Spec{Name: "send", Effect: tool.EffectExternal, Idempotent: idempotent}, func(ctx context.Context, _ any) (any, error) {
			if calls.Add(1) > 1 {
				return map[string]any{"sent": true}, nil
			}
			started <- struct{}{}
			<-ctx.Done()
			return nil, fault.New(fault.Cancelled, fmt.Errorf("call cancelled: %w", context.Cause(ctx)))
		})
		fx := newFixture(t, send, newKeyCounter("done", false))
		f := fx.parse("name: i\nsteps:\n  - {id: first, tool: done, args: {}}\n  - {id: s, tool: send, args: {}}\n")
		rctx, cancel := context.WithCancelCause(ctx)
		go func() {
			<-started
			cancel(fmt.Errorf("interrupted: %w", engine.ErrInterrupted))
		}()
		if _, err := durableEngine(fx, st, "p1").Run(rctx, f, nil, &engine.RunOptions{RunID: "r"}); err != nil {
			t.Fatal(err)
		}
		if _, err := durableEngine(fx, st, "p2").Resume(ctx, f, "r"); err != nil {
			t.Fatal(err)
		}
		for k, decide := range decisions {
			if err := decide(st); err != nil {
				t.Fatal(err)
			}
			if _, err := durableEngine(fx, st, fmt.Sprintf("p%d", k+3)).Resume(ctx, f, "r"); err != nil {
				t.Fatal(err)
			}
		}
		return "r", f.Source
	}
}

// escalateCase runs a step that fails once with on_error: escalate, then
// applies the decision and resumes the run.
func escalateCase(decide func(st store.Store) error) func(t *testing.T, st store.Store) (string, []byte) {
	return func(t *testing.T, st store.Store) (string, []byte) {
		ctx := context.Background()
		c := newKeyCounter("pay", false)
		c.fail = func(n int) error {
			if n == 1 {
				return fault.BusinessErr(errors.New("card declined"))
			}
			return nil
		}
		fx := newFixture(t, c)
		f := fx.parse("name: es\nsteps:\n  - {id: pay, tool: pay, args: {amount: 5}, on_error: escalate}\n")
		if _, err := durableEngine(fx, st, "p1").Run(ctx, f, nil, &engine.RunOptions{RunID: "r"}); err != nil {
			t.Fatal(err)
		}
		if err := decide(st); err != nil {
			t.Fatal(err)
		}
		if _, err := durableEngine(fx, st, "p2").Resume(ctx, f, "r"); err != nil {
			t.Fatal(err)
		}
		return "r", f.Source
	}
}

// approve decides run r's approval of step (out for settled).
func approve(st store.Store, step string, status store.ApprovalStatus, out string) error {
	_, err := st.DecideApproval(context.Background(), &store.DecideApprovalParams{RunID: "r", StepID: step, Status: status, Output: json.RawMessage(out), DecidedBy: "ann"})
	return err
}

// projected reads the state the store's projections hold for a run.
func projected(t *testing.T, st store.Store, runID string) replayState {
	t.Helper()
	ctx := context.Background()
	run, err := st.GetRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := st.Steps(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	aps, err := st.Approvals(ctx, &store.ListApprovalsParams{RunID: runID, Status: store.ApprovalPending})
	if err != nil {
		t.Fatal(err)
	}
	s := replayState{Run: run.Status, Steps: map[string]replayStepState{}}
	for _, row := range rows {
		s.Steps[row.StepID] = replayStepState{Status: row.Status, Attempts: row.Attempt, OutputSHA: row.OutputSHA}
	}
	for _, a := range aps {
		s.Pending = append(s.Pending, a.StepID+":"+string(a.Kind))
	}
	slices.Sort(s.Pending)
	return s
}

// TestWriteReplayCorpus runs, with -update-replay, every case that has no
// journal in testdata/replay yet with today's engine on a SQLite file, and
// writes its flow, journal and projected state there. Journals already
// there are never rewritten: they are what older engines wrote, which is
// the point (delete a case's files to write it again).
func TestWriteReplayCorpus(t *testing.T) {
	if !*updateReplay {
		t.Skip("run with -update-replay to add the missing cases to the replay corpus")
	}
	for _, c := range replayCases() {
		t.Run(c.name, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(replayDir, c.name+".jsonl")); err == nil {
				t.Skip("written by an earlier engine: kept")
			}
			st := openSQLite(t)
			id, src := c.run(t, st)
			evs, err := st.Events(context.Background(), id, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			var jl []byte
			for _, ev := range evs {
				b, err := json.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				jl = append(append(jl, b...), '\n')
			}
			golden, err := json.MarshalIndent(projected(t, st, id), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			base := filepath.Join(replayDir, c.name)
			for ext, b := range map[string][]byte{".flow.yaml": src, ".jsonl": jl, ".golden.json": append(golden, '\n')} {
				if err := os.WriteFile(base+ext, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
