package temporal

import (
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/tool"
)

// sagaFlow takes a charge (compensated by refund), holds stock (undone by
// release), reads, pays (irreversible, tagged money), and fails at ship.
const sagaFlow = `name: saga
on_failure: compensate
steps:
  - {id: take, tool: charge, args: {amount: 5}}
  - {id: hold, tool: reserve, args: {sku: a1}, requires: [take]}
  - {id: look, tool: peek, args: {}, requires: [hold]}
  - {id: ship, tool: ship, args: {fail: true}, requires: [look]}
`

// sagaTools are sagaFlow's tools; refundIdem says whether refund is
// idempotent.
func sagaTools(l *ledger, refundIdem bool) []tool.Tool {
	return []tool.Tool{
		l.toolOf(tool.Spec{Name: "charge", Effect: tool.EffectExternal, Reversibility: tool.Compensatable, Tags: []string{"money"},
			Compensate: &tool.Compensation{Tool: "refund", Args: map[string]any{"charge": "{output.n}", "amount": "{args.amount}"}}}),
		l.toolOf(tool.Spec{Name: "refund", Effect: tool.EffectExternal, Idempotent: refundIdem}),
		l.toolOf(tool.Spec{Name: "reserve", Effect: tool.EffectWrite, Reversibility: tool.Reversible,
			Undo: &tool.Compensation{Tool: "release", Args: map[string]any{"sku": "{args.sku}"}}}),
		l.toolOf(tool.Spec{Name: "release", Effect: tool.EffectWrite, Idempotent: true}),
		l.toolOf(tool.Spec{Name: "peek", Effect: tool.EffectRead, Idempotent: true}),
		l.toolOf(tool.Spec{Name: "ship", Effect: tool.EffectWrite, Idempotent: true}),
	}
}

// TestSaga: a run with on_failure: compensate that fails takes back its
// calls, latest first: the reservation is undone (release), then the
// charge compensated (refund), each once, with the key of the call it
// takes back extended with the action; the read is kept. The run ends
// failed with the error it failed with.
func TestSaga(t *testing.T) {
	l := newLedger()
	p := load(t, sagaFlow, sagaTools(l, true)...)
	h := newHarness(t, p)
	st := h.run(map[string]any{})
	if st.Status != "failed" || st.Error == nil || st.Error.Step != "ship" || st.Error.Class != string(fault.Business) {
		t.Fatalf("run: %+v (error %+v)", st, st.Error)
	}
	if got := l.keys("refund"); len(got) != 1 || got[0] != "run-1/take/1/compensate" {
		t.Errorf("refund calls %v, want [run-1/take/1/compensate]", got)
	}
	if got := l.keys("release"); len(got) != 1 || got[0] != "run-1/hold/1/undo" {
		t.Errorf("release calls %v, want [run-1/hold/1/undo]", got)
	}
	if got, want := strings.Join(l.order, ","), "charge,reserve,peek,ship,release,refund"; got != want {
		t.Errorf("calls in order %s, want %s", got, want)
	}
	for id, want := range map[string]string{"take": "succeeded", "hold": "succeeded", "look": "succeeded", "ship": "failed"} {
		if s := stepOf(t, st, id); s.Status != want {
			t.Errorf("step %s: %s, want %s", id, s.Status, want)
		}
	}
}

// TestSagaWithoutCompensate: without on_failure: compensate nothing is
// taken back.
func TestSagaWithoutCompensate(t *testing.T) {
	l := newLedger()
	p := load(t, strings.Replace(sagaFlow, "on_failure: compensate\n", "", 1), sagaTools(l, true)...)
	st := newHarness(t, p).run(map[string]any{})
	if st.Status != "failed" || l.count("refund")+l.count("release") != 0 {
		t.Fatalf("run %s; refund %d, release %d", st.Status, l.count("refund"), l.count("release"))
	}
}

// TestSagaEscalation: a compensation that fails is never retried on its
// own: it waits for a person as an escalation under the id a local run
// uses (take/1/compensate). Approved, it is made once more (with the same
// key); an undo that failed and was rejected is left as it is. While
// escalations wait the run is waiting; then it ends failed.
func TestSagaEscalation(t *testing.T) {
	l := newLedger()
	l.fails["refund"] = failPlan{n: 1, class: fault.Transient}
	l.fails["release"] = failPlan{n: 9, class: fault.Business}
	p := load(t, sagaFlow, sagaTools(l, true)...)
	h := newHarness(t, p)
	var bad, approve, reject *updated
	h.env.RegisterDelayedCallback(func() {
		var st Status
		h.query(QueryStatus, &st)
		if st.Status != "waiting" {
			t.Errorf("status %s, want waiting", st.Status)
		}
		var pend []Pending
		h.query(QueryPending, &pend)
		if len(pend) != 2 || pend[0].Step != "hold/1/undo" || pend[1].Step != "take/1/compensate" ||
			pend[1].Kind != "escalation" || !strings.Contains(pend[1].Error, "not retried blindly") {
			t.Errorf("pending %+v", pend)
		}
		var next []NextAction
		h.query(QueryNextActions, &next)
		if len(next) != 6 || !strings.Contains(next[0].Why, "hold/1/undo") {
			t.Errorf("next_actions %+v", next)
		}
		if l.count("refund") != 1 || l.count("release") != 1 {
			t.Errorf("made refund %d, release %d times before a person decided; want 1 each", l.count("refund"), l.count("release"))
		}
		bad = h.update(Decision{Step: "take/1/compensate", Action: "maybe"})
		approve = h.update(Decision{Step: "take/1/compensate", Action: ActionApprove, By: "ana"})
		reject = h.update(Decision{Step: "hold/1/undo", Action: ActionReject, By: "ana"})
	}, time.Minute)
	st := h.run(map[string]any{})
	if !bad.done || bad.err == nil || !strings.Contains(bad.err.Error(), "approve, reject or settle") {
		t.Errorf("an unknown action: %+v", bad)
	}
	for _, u := range []*updated{approve, reject} {
		if !u.done || u.err != nil {
			t.Errorf("decision: %+v", u)
		}
	}
	if st.Status != "failed" || st.Error == nil || st.Error.Step != "ship" {
		t.Fatalf("run: %+v (error %+v)", st, st.Error)
	}
	if got := l.keys("refund"); len(got) != 2 || got[0] != "run-1/take/1/compensate" || got[1] != got[0] {
		t.Errorf("refund calls %v: failed once, made once more when approved, with one key", got)
	}
	if l.count("release") != 1 {
		t.Errorf("release made %d times; rejected, it is left after its one failure", l.count("release"))
	}
}

// TestSagaLostWorker: a compensation whose worker was lost is made again
// with the same key when its tool is idempotent; when it is not, it waits
// for a person as unknown, and settle says it was taken back by hand.
func TestSagaLostWorker(t *testing.T) {
	t.Run("idempotent", func(t *testing.T) {
		l := newLedger()
		p := load(t, sagaFlow, sagaTools(l, true)...)
		h, _ := lossy(t, p, "compensate:take")
		st := h.run(map[string]any{})
		if st.Status != "failed" {
			t.Fatalf("run: %+v %+v", st, st.Error)
		}
		if got := l.keys("refund"); len(got) != 2 || got[0] != "run-1/take/1/compensate" || got[1] != got[0] {
			t.Errorf("refund calls %v: lost once, made again with its key", got)
		}
	})
	t.Run("not idempotent", func(t *testing.T) {
		l := newLedger()
		p := load(t, sagaFlow, sagaTools(l, false)...)
		h, _ := lossy(t, p, "compensate:take")
		var settle *updated
		h.env.RegisterDelayedCallback(func() {
			var pend []Pending
			h.query(QueryPending, &pend)
			if len(pend) != 1 || pend[0].Step != "take/1/compensate" || pend[0].Kind != "unknown" || !strings.Contains(pend[0].Error, "unknown") {
				t.Errorf("pending %+v", pend)
			}
			settle = h.update(Decision{Step: "take/1/compensate", Action: ActionSettle, By: "ana"})
		}, time.Minute)
		st := h.run(map[string]any{})
		if settle == nil || !settle.done || settle.err != nil {
			t.Errorf("settle: %+v", settle)
		}
		if st.Status != "failed" || l.count("refund") != 1 {
			t.Fatalf("run %s, refund made %d times (want once: the lost call, never again)", st.Status, l.count("refund"))
		}
	})
}

// TestSagaFreeze: a call that cannot be taken back (irreversible) is
// frozen; tagged money, it waits for a person (pay/1/freeze), whose
// decision settles it. Nothing is made in its stead.
func TestSagaFreeze(t *testing.T) {
	l := newLedger()
	p := load(t, `name: freeze
on_failure: compensate
steps:
  - {id: pay, tool: pay, args: {}}
  - {id: ship, tool: ship, args: {fail: true}, requires: [pay]}
`, l.toolOf(tool.Spec{Name: "pay", Effect: tool.EffectExternal, Reversibility: tool.Irreversible, Tags: []string{"money"}}),
		l.toolOf(tool.Spec{Name: "ship", Effect: tool.EffectWrite, Idempotent: true}))
	h := newHarness(t, p)
	var approve *updated
	h.env.RegisterDelayedCallback(func() {
		var pend []Pending
		h.query(QueryPending, &pend)
		if len(pend) != 1 || pend[0].Step != "pay/1/freeze" || pend[0].Kind != "escalation" || !strings.Contains(pend[0].Error, "cannot be taken back") {
			t.Errorf("pending %+v", pend)
		}
		approve = h.update(Decision{Step: "pay/1/freeze", Action: ActionApprove, By: "ana"})
	}, time.Minute)
	st := h.run(map[string]any{})
	if approve == nil || !approve.done || approve.err != nil {
		t.Errorf("approve: %+v", approve)
	}
	if st.Status != "failed" || strings.Join(l.order, ",") != "pay,ship" {
		t.Fatalf("run %s, calls %v", st.Status, l.order)
	}
}

// TestSagaAgentCall: an agent's call is taken back too, its compensation
// keyed by the call's key.
func TestSagaAgentCall(t *testing.T) {
	l := newLedger()
	p := loadAgent(t, `name: agentsaga
on_failure: compensate
inputs: {type: object, properties: {task: {type: string}}}
steps:
  - id: agent
    type: agent
    model: m
    instructions: Take the payment.
    prompt_template: "{input.task}"
    tools: {charge: }
  - {id: ship, tool: ship, args: {fail: true}, requires: [agent]}
`, `replies:
  - {step: agent, decision: agent, turn: 1, tool_calls: [{name: charge, args: {amount: 5}}]}
  - {step: agent, decision: agent, turn: 2, raw: "charged"}
`, sagaTools(l, true)...)
	st := newHarness(t, p).run(map[string]any{"task": "charge 5"})
	if st.Status != "failed" || st.Error == nil || st.Error.Step != "ship" {
		t.Fatalf("run: %+v (error %+v)", st, st.Error)
	}
	if got := l.keys("refund"); len(got) != 1 || got[0] != "run-1/agent/1/turn1/call1/compensate" {
		t.Errorf("refund calls %v, want [run-1/agent/1/turn1/call1/compensate]", got)
	}
}

// TestSagaRetried: a failed saga run closes carrying what it took back; a
// retry makes again what was taken back (take, at attempt 2) and, failing
// again, takes back only what the retry did: no call is compensated
// twice.
func TestSagaRetried(t *testing.T) {
	l := newLedger()
	p := load(t, `name: saga-retry
on_failure: compensate
steps:
  - {id: take, tool: charge, args: {amount: 5}}
  - {id: again, tool: charge, args: {amount: 7}, requires: [take]}
  - {id: ship, tool: ship, args: {fail: true}, requires: [again]}
`, sagaTools(l, true)...)
	in, err := StartInput(p, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	_, cl := newHarness(t, p).execute(in)
	if cl == nil || cl.Status.Status != "failed" || cl.Next.Carry == nil {
		t.Fatalf("first run closed %+v", cl)
	}
	if got := strings.Join(l.keys("refund"), " "); got != "run-1/again/1/compensate run-1/take/1/compensate" {
		t.Fatalf("refunds after the first run %q", got)
	}
	// re-run from again: take, refunded, is made again too; the retry's
	// calls (attempt 2) are taken back, the first run's are not again.
	next := cl.Next
	next.Retry = &Decision{Step: "again"}
	_, cl2 := newHarness(t, p).execute(next)
	if cl2 == nil || cl2.Status.Status != "failed" {
		t.Fatalf("retried run closed %+v", cl2)
	}
	if got := strings.Join(l.keys("refund"), " "); got != "run-1/again/1/compensate run-1/again/2/compensate run-1/take/1/compensate run-1/take/2/compensate" {
		t.Errorf("refunds after the retry %q: want the retry's two calls' added, none twice", got)
	}
}
