package engine

import (
	"context"
	"encoding/json"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// run is one execution of a flow. The scheduler goroutine (the caller of
// execute) owns env, steps and the ready queue; workers only read what they
// were handed and report back on results.
type run struct {
	e     *Engine
	f     *flow.Flow
	b     *bound
	id    string
	input any
	// tenant owns the run (store.Run.Tenant): its model calls are
	// reserved against that tenant's budgets (spend.go).
	tenant string
	// inv is the run's view of the store's invalidated resources, in its
	// context (begin); nil for a run that is not durable.
	inv *invoke.Invalid

	ctx         context.Context
	cancel      context.CancelCauseFunc
	stopTimeout context.CancelFunc
	start       time.Time
	// born, when set, is when a resumed run was created: its duration
	// covers its whole life, not only this process.
	born time.Time

	// env is the scope of templates and expressions: input fields, "input",
	// "steps" (id → {status, output}) and every settled step's output by id.
	env     map[string]any
	stepsNS map[string]any
	steps   []stepState
	// m decides: statuses, the ready queue, what waits on a person,
	// when, retries and on_error; budget counts against the limits.
	m        sched.Machine
	running  int
	results  chan *outcome
	failure  *RunError
	budget   sched.Budget
	recordMu sync.Mutex
	seq      int64
	// slab is what events are cut from (under recordMu): slab[len:cap] is
	// free. An event is its sink's to keep, so a slab is not reused: when
	// it runs out a new one is made. When the sink is a trace.Borrower
	// (borrow), the slab is reused from the start once no event is in
	// flight (none waits for the sink or the journal), and kept with the
	// pooled run.
	slab   []trace.Event
	borrow bool
	// outbox holds the recorded events not handed to the sink yet, in
	// sequence order (under recordMu); emitting is set while a goroutine
	// hands them over, outside recordMu (deliverLocked). idle, when set, is
	// closed when that goroutine is done.
	outbox, sending []*trace.Event
	emitting        bool
	idle            chan struct{}
	// quiet: no sink and no journal. Events are numbered, not made.
	quiet bool
	// onEffect, when set (an attempt outside the runner: Attempt), is
	// handed the effect record of every call that reached a tool with an
	// effect, as recordCall makes it; it may be called concurrently.
	onEffect func(journal.Effect)
	// onPlan, when set (Attempt: AttemptRequest.OnPlan), is handed each
	// event of a plan step's planner and executor.
	onPlan   func(plan.Event)
	storeCtx context.Context
	storeErr error
	// outside is set on an attempt outside the runner (runAt): its
	// model calls' budgets and the store it reserves in (attempt_budget.go).
	outside *outsideRun
	// buf is the scheduler's scratch buffer for canonical encodings.
	buf []byte
	// closed is set (under recordMu) once the run's last event is
	// recorded; abandoned once a tool call was given up at its deadline
	// with the tool still running (the run then never goes back to the
	// pool: that tool may still report).
	closed    bool
	abandoned atomic.Bool
	// held is set once a premise failed in the run (hold): the steps in
	// flight start no new unit (fanout.Held).
	held atomic.Bool
	// d is the durable part (journal batching, approvals, lease).
	d durability
	// risk is the run's risk tier and its controls' state (startRisk);
	// nil for a flow without risk tiers. restoredTier is the tier a
	// resumed run's journal reached.
	risk         *safety.RunRisk
	restoredTier int
	// ev is what the run recorded for the gate (evidence.go); nil when
	// the run is not gated.
	ev *safety.Evidence
}

// stepState is what executing a step left beside its status (r.m):
// its output, times, error and usage.
type stepState struct {
	output    any
	outputSHA string
	// outputSize is the length of output's canonical JSON; 0 when not
	// known (a step settled by a person or restored on resume).
	outputSize int64
	// outputJSON is output's canonical JSON when the run is durable (the
	// digest's bytes, kept for the step's journal row); nil otherwise.
	outputJSON []byte
	attempts   int
	started    time.Time
	settled    time.Time
	duration   time.Duration
	err        *RunError
	// use is what the step's model calls cost; workers add to it under
	// the run's recordMu (addUse).
	use stepUse
}

type stepUse struct {
	corrections, llmCalls, tokensIn, tokensOut int
}

// storeCtx is the context of commits: they must finish even when the run's
// context is cancelled, or a transition would be acted on but not recorded.
var storeCtx = context.WithoutCancel(context.Background())

// newRun prepares a run, reusing the buffers of a finished one when the
// engine's pool has one (a run's state never escapes into its Result).
func newRun(e *Engine, f *flow.Flow, b *bound, id string, input any) *run {
	n := len(f.Steps)
	r, _ := e.runs.Get().(*run)
	if r == nil {
		r = &run{}
	}
	env, steps, m, results, buf, outbox, sending, slab := r.env, r.steps, r.m, r.results, r.buf, r.outbox, r.sending, r.slab
	*r = run{e: e, f: f, b: b, id: id, input: input, buf: buf[:0], outbox: outbox[:0], sending: sending[:0], storeCtx: storeCtx, m: m}
	if e.borrow {
		r.slab = slab[:0]
	}
	if env == nil {
		env = make(map[string]any, n+8)
	} else {
		clear(env)
	}
	if cap(steps) < n {
		steps = make([]stepState, n)
	} else {
		steps = steps[:n]
		clear(steps)
	}
	r.m.Reset(f, id)
	r.budget.Reset(f)
	if cap(results) < n {
		results = make(chan *outcome, n)
	}
	r.env, r.steps, r.results = env, steps, results
	if m, ok := input.(map[string]any); ok {
		for k, v := range m {
			r.env[k] = v
		}
	}
	r.env["input"] = input
	r.quiet = !e.durable && e.cfg.Sink == trace.Discard
	r.borrow = e.borrow
	if f.ReadsSteps {
		r.stepsNS = make(map[string]any, len(f.Steps))
		r.env["steps"] = r.stepsNS
	}
	for i := range f.Steps {
		r.setStatus(i, trace.StepPending)
	}
	r.startEvidence()
	return r
}

// recycle returns a finished run's buffers to the engine's pool.
func (r *run) recycle() {
	if len(r.results) != 0 || r.running != 0 || r.abandoned.Load() {
		return // never reuse a run that still has work in flight
	}
	e := r.e
	clear(r.env)
	slab := r.slab[:0]
	if !r.borrow {
		slab = nil // its events are the sink's
	}
	*r = run{env: r.env, steps: r.steps, m: r.m, results: r.results, buf: r.buf, outbox: r.outbox, sending: r.sending, slab: slab}
	e.runs.Put(r)
}

// begin starts the run's clock and context (with the budget timeout); end
// releases them.
func (r *run) begin(parent context.Context) {
	r.start = r.e.cfg.Clock.Now()
	ctx, cancel := context.WithCancelCause(parent)
	r.stopTimeout = nil
	if t, cause := r.budget.Timeout(); t > 0 {
		ctx, r.stopTimeout = context.WithTimeoutCause(ctx, t, cause)
	}
	r.inv = nil
	if r.d.on {
		// tools tell a durable run the process groups they start (onProcess).
		ctx = tool.WithProcessHook(ctx, r.onProcess)
	}
	if r.d.on || r.outside.stored() {
		// every call of the run checks the resources it touches against
		// those remediations invalidated (invoke.Invalid).
		r.inv = &invoke.Invalid{Store: r.e.cfg.Store, Tenant: r.tenant}
		ctx = invoke.WithInvalid(ctx, r.inv)
	}
	r.ctx, r.cancel = r.e.withDeltas(ctx), cancel
}

func (r *run) end() {
	if r.stopTimeout != nil {
		r.stopTimeout()
	}
	r.cancel(nil)
	r.reportSpent()
	r.reportTainted()
}

// execute runs the scheduler loop until every step settled or the run failed.
func (r *run) execute(parent context.Context) *Result {
	r.begin(parent)
	defer r.end()
	r.startLease(r.e.cfg.LeaseTTL)
	r.record(trace.Event{Kind: trace.RunStarted, Flow: r.f.Name, Status: string(trace.RunRunning)})
	r.startRisk()
	r.m.Seed()
	r.loop()
	return r.finish(parent)
}

// loop carries out the machine's commands until it says the run is done.
func (r *run) loop() {
	for {
		switch cmd := r.m.Next(r.running); cmd.Op {
		case sched.Finish:
			return
		case sched.Start:
			if r.ctx.Err() != nil {
				r.fail(r.interruption(), "") // the machine stops: nothing more starts
			} else {
				r.dispatch(cmd.Step)
			}
			continue
		}
		// sched.Await
		select {
		case o := <-r.results:
			// a step that ran inline is done: nothing to wait for, so no
			// barrier here; its settlement is committed before the next
			// step starts (dispatch) or with the run's (finish).
			r.take(o)
			continue
		default:
		}
		r.flush()
		select {
		case o := <-r.results:
			r.take(o)
		case <-r.ctx.Done():
			if r.failure == nil {
				r.fail(r.interruption(), "")
			}
			// in-flight workers see the same ctx and report back; keep
			// draining so none outlives the run.
			r.take(<-r.results)
		}
	}
}

// interruption is the error of a run whose context ended.
func (r *run) interruption() *RunError {
	cause := context.Cause(r.ctx)
	return toRunError(cause, "", trace.OriginEngine)
}

// dispatch decides whether step i runs, and starts it.
func (r *run) dispatch(i int) {
	s := r.f.Steps[i]
	st := &r.steps[i]
	ectx, cancel := r.evalCtx(s)
	adm := r.m.Admit(ectx, i, r.env)
	cancel()
	if r.ctx.Err() != nil {
		r.fail(r.interruption(), "") // the run's time ran out while when was evaluated
		return
	}
	switch adm.Verdict {
	case sched.Skip:
		r.m.Settle(i, trace.StepSkipped, st.attempts, "")
		r.publish(i, nil)
		r.emitSettled(i, nil, nil, nil)
		return
	case sched.Fail:
		err := &RunError{Class: fault.Business, Step: s.ID, Origin: trace.OriginEngine, Message: adm.Reason}
		st.err = err
		r.m.Settle(i, trace.StepFailed, st.attempts, "")
		r.emitSettled(i, nil, nil, err)
		r.fail(err, s.ID)
		return
	}
	if r.d.on && r.decide(i) {
		return
	}
	job := r.prepare(i)
	r.assessStep(i, job)
	if r.ctx.Err() != nil {
		r.fail(r.interruption(), "") // the run's time ran out while the input was rendered
		return
	}
	if r.d.on && r.gatePark(i, job) {
		return
	}
	st.started = r.e.cfg.Clock.Now()
	st.attempts = 1
	if n := r.d.firstAttempt[i]; n > 0 {
		st.attempts = n
	}
	r.m.Start(i, st.attempts)
	r.setStatus(i, trace.StepRunning)
	ev := trace.Event{Kind: trace.StepStarted, StepID: s.ID, StepType: string(s.Type), Status: string(trace.StepRunning),
		Model: s.Model, Tool: s.Tool, Time: st.started}
	ev.InputSHA = job.inputSHA
	ev.Attempt = st.attempts
	r.record(ev)
	if r.d.on {
		r.stageStep(i)
		// The start must be committed before the effect, and so must every
		// settlement before the next step. A pure step's start alone has
		// nothing to protect: it rides with its settlement (pureStart).
		if !r.pureStart(i) || r.barrierPending() || r.storeErr != nil {
			if r.flush(); r.storeErr != nil || r.interrupted() {
				r.m.Unstart(i) // it never ran
				if r.storeErr != nil {
					r.fail(toRunError(r.storeErr, s.ID, trace.OriginEngine), s.ID)
				} else {
					r.fail(r.interruption(), "")
				}
				return
			}
		}
	}
	r.running++
	if r.running == 1 && r.m.Ready() == 0 {
		r.results <- r.work(job) // the only thing to do: run it inline
		return
	}
	go func() { r.results <- r.work(job) }()
}

// settle records a step's outcome and releases its downstream steps.
func (r *run) settle(o *outcome) {
	i := o.index
	s := r.f.Steps[i]
	st := &r.steps[i]
	st.attempts = o.attempts
	st.settled = r.e.cfg.Clock.Now()
	st.duration = st.settled.Sub(st.started)
	if p := o.park; p != nil && p.agentWait != nil {
		st.settled = time.Time{}
		r.parkAgent(i, p.agentWait)
		return
	}
	if p := o.park; p != nil && p.held {
		// stopped by a failed premise before its remaining units: it stays
		// running, unsettled, and a resume continues it (errHeld).
		st.settled = time.Time{}
		return
	}
	if p := o.park; p != nil && p.escalated {
		st.settled, st.err = time.Time{}, toRunError(o.lastErr, s.ID, o.origin)
		kind := store.KindEscalation
		if p.premise {
			kind = store.KindPremise // the whole run pauses (sched.Machine.Held)
		}
		a := r.park(i, kind, nil)
		a.Args = p.escArgs
		return
	}
	if o.err != nil {
		r.m.Settle(i, o.failStatus(), o.attempts, "")
		st.err = r.hide(toRunError(o.err, s.ID, o.origin))
		r.setStatus(i, r.m.Status(i))
		r.emitSettled(i, nil, o, st.err)
		r.fail(st.err, s.ID)
		return
	}
	r.m.Settle(i, o.status, o.attempts, o.outputSHA)
	st.output = o.output
	st.outputSHA = o.outputSHA
	st.outputSize = o.outputSize
	st.outputJSON = o.outputJSON
	if o.lastErr != nil {
		st.err = r.hide(toRunError(o.lastErr, s.ID, o.origin))
	}
	r.publish(i, o.output)
	r.emitSettled(i, o.output, o, st.err)
}

// publish makes a settled step visible to templates and expressions.
func (r *run) publish(i int, out any) {
	s := r.f.Steps[i]
	r.env[s.ID] = out
	if r.stepsNS != nil {
		r.stepsNS[s.ID] = map[string]any{"status": string(r.m.Status(i)), "output": out}
	}
}

// setStatus updates steps.<id>.status for flows that read it.
func (r *run) setStatus(i int, st trace.StepStatus) {
	if r.stepsNS == nil {
		return
	}
	id := r.f.Steps[i].ID
	m, _ := r.stepsNS[id].(map[string]any)
	if m == nil {
		m = map[string]any{"output": nil}
		r.stepsNS[id] = m
	}
	m["status"] = string(st)
}

// fail records the run's first failure and stops in-flight work.
func (r *run) fail(err *RunError, step string) {
	if r.failure != nil {
		return
	}
	if err.Step == "" {
		err.Step = step
	}
	r.failure = err
	r.m.Stop()
	if err.Class == fault.Cancelled || err.Class == fault.Budget && err.Step == "" {
		r.cancel(err.err)
		return
	}
	r.cancel(fault.Errorf(fault.Cancelled, "cancelled: the run stopped because step %s failed", err.Step))
}

func (r *run) finish(parent context.Context) *Result {
	res := &Result{RunID: r.id, Flow: r.f.Name, Outputs: make(map[string]any, len(r.steps)), Steps: make(map[string]StepResult, len(r.steps))}
	if r.failure != nil && !r.interrupted() {
		r.endResumed()
	}
	for i, s := range r.f.Steps {
		st := &r.steps[i]
		res.Steps[s.ID] = StepResult{Status: r.m.Status(i), Attempts: st.attempts, Duration: st.duration, Error: st.err,
			Model: modelUseOf(st.use.corrections, st.use.llmCalls, st.use.tokensIn, st.use.tokensOut)}
		switch r.m.Status(i) {
		case trace.StepSucceeded, trace.StepDefaulted, trace.StepFellBack:
			res.Outputs[s.ID] = st.output
		}
	}
	if r.interrupted() {
		return r.stop(res)
	}
	if r.storeErr != nil && r.failure == nil {
		r.failure = toRunError(r.storeErr, "", trace.OriginEngine)
	}
	var class fault.Class
	if r.failure != nil {
		class = r.failure.Class
	}
	switch res.Status = r.m.Outcome(r.failure != nil, class, parent.Err() != nil); res.Status {
	case trace.RunWaiting:
		res.Pending = r.d.parked
	case trace.RunCancelled:
		r.failure.Class = fault.Cancelled
	}
	if r.d.on && parent.Err() == nil && (res.Status == trace.RunFailed && r.f.OnFailure == flow.OnFailureCompensate || r.d.remedyOpen) {
		if pend := r.runRemedies(parent, res.Status == trace.RunFailed && r.f.OnFailure == flow.OnFailureCompensate); len(pend) > 0 {
			res.Status = trace.RunWaiting
			res.Pending = append(res.Pending, pend...)
		}
	}
	res.Error = r.failure
	spent := r.budget.Spent()
	res.Usage = Usage{Iterations: spent.Iterations, LLMCalls: spent.LLMCalls, TokensIn: spent.TokensIn, TokensOut: spent.TokensOut}
	since := r.start
	if !r.born.IsZero() {
		since = r.born
	}
	res.Duration = r.e.cfg.Clock.Now().Sub(since)
	ev := trace.Event{Kind: trace.RunSettled, Flow: r.f.Name, Status: string(res.Status), DurationMS: trace.Millis(res.Duration),
		TokensIn: res.Usage.TokensIn, TokensOut: res.Usage.TokensOut}
	if res.Status == trace.RunWaiting {
		ev.Kind = trace.RunParked
	}
	if f := r.failure; f != nil {
		ev.StepID, ev.ErrorClass, ev.Error, ev.Origin, ev.Budget = f.Step, string(f.Class), f.Message, f.Origin, f.Budget
	}
	r.record(ev)
	defer r.delivered()
	if r.d.on {
		up := &store.RunUpdate{Status: res.Status}
		up.Usage, _ = json.Marshal(res.Usage)
		if res.Status != trace.RunWaiting {
			up.SettledAt = r.e.cfg.Clock.Now()
		}
		if r.failure != nil {
			up.Error, _ = json.Marshal(r.failure)
			// the approvals a parallel branch still waits on close with
			// the run (store.Store.Commit).
			up.Reason = "the run " + string(res.Status) + ": " + r.failure.Message
		}
		r.recordMu.Lock()
		r.d.pendRun = up
		r.recordMu.Unlock()
		r.flush()
		r.endLease()
		if r.storeErr != nil && res.Error == nil {
			res.Status, res.Error = trace.RunFailed, toRunError(r.storeErr, "", trace.OriginEngine)
		}
	}
	return res
}

// hide returns e with the secrets the engine's Redactor knows hidden from
// its message: a step's error is stored, traced and printed from here.
func (r *run) hide(e *RunError) *RunError {
	if m := r.e.cfg.Redactor.String(e.Message); m != e.Message {
		c := *e
		c.Message = m
		return &c
	}
	return e
}

// record numbers an event, stamps it, hides the secrets in its text,
// stages it for the journal of a durable run, and hands it to the sink,
// outside recordMu (deliver). Safe for concurrent use by a run's workers.
func (r *run) record(e trace.Event) {
	r.recordMu.Lock()
	r.recordLocked(&e)
	r.deliverLocked()
}

// recordUnlessSettled records e unless the run has recorded its last
// event (a result reported after the run settled has no journal left).
func (r *run) recordUnlessSettled(e trace.Event) {
	r.recordMu.Lock()
	if r.closed {
		r.recordMu.Unlock()
		return
	}
	r.recordLocked(&e)
	r.deliverLocked()
}

func (r *run) recordLocked(e *trace.Event) {
	if e.Kind == trace.RunSettled || e.Kind == trace.RunParked {
		r.closed = true
	}
	r.seq++
	if r.quiet {
		return
	}
	ev := r.newEventLocked()
	*ev = *e
	ev.Seq = r.seq
	ev.RunID = r.id
	if ev.Time.IsZero() {
		ev.Time = r.e.cfg.Clock.Now()
	}
	if r.sealing() {
		was := payloadsOf(ev)
		ev.Redact(r.e.cfg.Redactor)
		r.sealEventLocked(ev, was)
	} else {
		ev.Redact(r.e.cfg.Redactor)
	}
	r.outbox = append(r.outbox, ev)
	if r.d.on {
		r.d.pendEv = append(r.d.pendEv, ev)
	}
}

// newEventLocked returns the memory of the next event. r.recordMu must be
// held.
func (r *run) newEventLocked() *trace.Event {
	if r.borrow && len(r.outbox) == 0 && !r.emitting && len(r.d.pendEv) == 0 {
		r.slab = r.slab[:0] // nothing is in flight: the sink has let go of every event
	}
	n := len(r.slab)
	if n == cap(r.slab) {
		size := 16 // a sink that keeps one event keeps its slab: slabs stay small
		switch {
		case r.borrow:
			// as many as are in flight at once: one in memory, a
			// transition's in a durable run.
			size = max(2*n, 2)
		case r.seq == 1:
			size = min(2*len(r.f.Steps)+2, 32) // a linear run's events: started and settled per step, and the run's two
		}
		r.slab = make([]trace.Event, 0, size)
		n = 0
	}
	r.slab = r.slab[:n+1]
	return &r.slab[n]
}

// deliverLocked hands the events recorded so far to the sink in sequence
// order, outside recordMu, which it releases. One goroutine at a time
// delivers: one that records while another delivers leaves its events to
// that one and returns, so neither the scheduler nor a worker waits for a
// sink while holding the run's lock, and a worker never waits for one that
// another goroutine is in.
func (r *run) deliverLocked() {
	if r.emitting || len(r.outbox) == 0 {
		r.recordMu.Unlock()
		return
	}
	r.emitting = true
	for len(r.outbox) > 0 {
		batch := r.outbox
		r.outbox = r.sending[:0]
		r.recordMu.Unlock()
		for _, ev := range batch {
			r.e.cfg.Sink.Emit(r.ctx, ev)
		}
		clear(batch)
		r.recordMu.Lock()
		r.sending = batch[:0]
	}
	r.emitting = false
	if r.idle != nil {
		close(r.idle)
		r.idle = nil
	}
	r.recordMu.Unlock()
}

// delivered waits until every event recorded so far has been handed to
// the sink (by another goroutine, if one is delivering).
func (r *run) delivered() {
	r.recordMu.Lock()
	if !r.emitting {
		r.deliverLocked()
		return
	}
	if r.idle == nil {
		r.idle = make(chan struct{})
	}
	idle := r.idle
	r.recordMu.Unlock()
	<-idle
}

func (r *run) emitSettled(i int, out any, o *outcome, err *RunError) {
	s := r.f.Steps[i]
	st := &r.steps[i]
	ev := trace.Event{Kind: trace.StepSettled, StepID: s.ID, StepType: string(s.Type), Status: string(r.m.Status(i)),
		Attempt: st.attempts, DurationMS: trace.Millis(st.duration), Time: st.settled}
	if o != nil {
		ev.OutputSHA, ev.Preview = o.outputSHA, o.preview
	}
	if err != nil {
		ev.ErrorClass, ev.Error, ev.Origin, ev.Budget = string(err.Class), err.Message, err.Origin, err.Budget
	}
	r.record(ev)
	r.stageStep(i)
}

// addUse charges one model call, or one corrective request, to step i.
// Safe for concurrent use by the step's workers.
func (r *run) addUse(i int, u stepUse) {
	r.recordMu.Lock()
	st := &r.steps[i].use
	st.corrections += u.corrections
	st.llmCalls += u.llmCalls
	st.tokensIn += u.tokensIn
	st.tokensOut += u.tokensOut
	r.recordMu.Unlock()
}

// scope returns a private copy of env for a worker that evaluates against it.
func (r *run) scope() map[string]any { return maps.Clone(r.env) }
