package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/value"
)

// durability is the part of a run that exists only with a durable store:
// the transition being assembled, the run's version, and what a person
// decided about parked steps.
type durability struct {
	on      bool
	version int64
	// the transition being assembled until the next barrier (flush).
	pendEv    []*trace.Event
	pendSteps []*store.Step
	pendRun   *store.RunUpdate
	pendAppr  []*store.Approval
	// agentCalls are the records of an agent's calls that returned, by
	// key, until the loop commits its own record of each (callrec.go
	// recordCall, agent.go CommitCall); guarded by recordMu.
	agentCalls map[string]*store.Call
	// freeRows are step rows of committed transitions, reused: a store is
	// done with a transition once Commit returns (store.Store.Commit).
	freeRows []*store.Step
	// decisions by step id (decided approvals found on resume).
	decisions map[string]*store.Approval
	// parked are the approvals the run waits on.
	parked []*store.Approval
	// remedyOpen: the run waits, or waited, on a person's decision about a
	// remediation (remedy.go), which the run's end carries on with.
	remedyOpen bool
	// approved are the steps a person approved, until they start, with
	// the canonical args the approval recorded (nil for none).
	approved map[int][]byte
	// firstAttempt by step index: a resumed in-flight step continues with
	// the attempt it had (same idempotency key), an approved unknown one
	// with the next.
	firstAttempt map[int]int
	// continued are the agent steps that waited for people on their calls
	// and continue their session at the same attempt once all are decided:
	// their unit was charged to the run's budget when it first ran (the
	// usage written as it parked carries it), so runUnit does not charge
	// it again; a step run counts 1 (docs/flow-format.md max_iterations),
	// as on Temporal.
	continued map[int]bool
	// resumedRunning are the steps a resumed run found running (in flight
	// when a process stopped, or held by a failed premise): endResumed.
	resumedRunning []int
	// reopened by step index: the attempt at which the last rein runs
	// retry re-opened the step (journal.StepReopened); absent for a step
	// never re-opened. See fallbackAttempt.
	reopened map[int]int
	// toPark are resumed steps found in flight that are not idempotent;
	// notes says, by step index, what was found of their tools' processes
	// (stopLeftovers), for the question a person is asked.
	toPark []int
	notes  map[int]string
	// procs are the tool_process events of a resumed run's journal: the
	// process groups its tools started, which stopLeftovers stops.
	procs []*trace.Event
	// progress by step index: what the call records of a resumed step
	// say it had done (resume_calls.go).
	progress map[int]*stepProgress
	// guards by step index: the decisions on a resumed llm step's
	// guardrail trips, until its attempt takes them (takeGuards, under
	// recordMu; guardwait.go).
	guards map[int]*guardResume
	// create, until the first commit, is the run that commit creates
	// (store.Transition.Create): a run without an idempotency key costs no
	// commit of its own.
	create *store.CreateRunParams
	// pendSeal are the sealed payloads of the transition being assembled
	// (seal.go), committed in its sealed event; guarded by recordMu.
	pendSeal []journal.SealedPayload
	// open are the payloads a resume opened from the run's sealed events
	// (seal.go), for the agent transcripts read as their steps run again.
	open unsealed
	// begun: a resumed run's journal shows it started (begun); false for
	// an enqueued run a worker starts.
	begun bool
	// lease: leased is when it was last taken or renewed (Config.Clock's
	// time, the Now the store was given, or before the creating commit's,
	// so the expiry reckoned from it is never late); lost is set once it
	// is gone, and from then on nothing is committed.
	owner  string
	leased time.Time
	lost   atomic.Pointer[fault.Error]
	beat   *heartbeat
}

// FlowHash is the sha256 of a flow's text: the identity a durable run pins.
func FlowHash(f *flow.Flow) string {
	sum := sha256.Sum256(f.Source)
	return hex.EncodeToString(sum[:])
}

// startKey is a run's start key: RunOptions.IdempotencyKey when the
// caller gave one, else the one the flow's idempotency: policy derives.
func startKey(f *flow.Flow, input any, opts *RunOptions) (string, error) {
	if opts == nil {
		return idempotencyKey(f, input, "")
	}
	if opts.IdempotencyKey != "" {
		return opts.IdempotencyKey, nil
	}
	return idempotencyKey(f, input, opts.Session)
}

// StartKey is the start key f's idempotency: policy derives from a run's
// input and session ("" for none), as a durable start does: a backend
// that keys runs itself (Temporal's workflow id) dedups starts by it.
// ErrSessionRequired when the policy needs a session and has none.
func StartKey(f *flow.Flow, input any, session string) (string, error) {
	return idempotencyKey(f, input, session)
}

// idempotencyKey derives a start key from the flow's idempotency: policy.
func idempotencyKey(f *flow.Flow, input any, session string) (string, error) {
	switch f.Idempotency {
	case "", "none":
		return "", nil
	}
	buf, err := value.AppendCanonical(nil, input)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte(f.Name))
	h.Write([]byte{0})
	if f.Idempotency == "session_workflow_input_hash" {
		if session == "" {
			return "", ErrSessionRequired
		}
		h.Write([]byte(session))
		h.Write([]byte{0})
	}
	h.Write(buf)
	return f.Idempotency + ":" + hex.EncodeToString(h.Sum(nil)), nil
}

// ErrSessionRequired is the error of starting a flow whose idempotency is
// session_workflow_input_hash without a session (RunOptions.Session).
// Its class is business.
var ErrSessionRequired = fault.New(fault.Business, errors.New("the flow's idempotency is session_workflow_input_hash: start it with a session id (RunOptions.Session)"))

// needsStore reports why a flow cannot run without a durable store.
func needsStore(f *flow.Flow) string {
	for _, s := range f.Steps {
		if sched.WaitsFor(s) == sched.Person {
			return "step " + s.ID + " waits for an approval, which needs a durable store (Config.Store)"
		}
		if s.Agent != nil {
			for _, t := range s.Agent.Tools {
				if t.Approval {
					return "agent step " + s.ID + " has tool " + t.Name + " with approval: required, which needs a durable store (Config.Store)"
				}
			}
		}
		if sched.WaitsFor(s) == sched.Agent {
			return "step " + s.ID + " waits for an agent's submission, which needs a durable store (Config.Store)"
		}
	}
	return ""
}

// stageLocked adds a step projection row to the transition being built.
func (r *run) stageStep(i int) {
	if !r.d.on {
		return
	}
	s := r.f.Steps[i]
	st := &r.steps[i]
	row := r.stepRow()
	*row = store.Step{RunID: r.id, StepID: s.ID, Type: string(s.Type), Status: r.m.Status(i), Attempt: st.attempts,
		Idempotent: r.idempotent(i), StartedAt: st.started, SettledAt: st.settled, OutputSHA: st.outputSHA}
	if sched.HasOutput(r.m.Status(i)) {
		if st.outputJSON != nil {
			row.Output = st.outputJSON
		} else if b, err := value.AppendCanonical(nil, st.output); err == nil {
			row.Output = b
		}
	}
	if st.err != nil {
		row.Error, _ = json.Marshal(st.err)
	}
	r.recordMu.Lock()
	r.d.pendSteps = append(r.d.pendSteps, row)
	r.recordMu.Unlock()
}

// stepRow returns a step row to fill, reused from a committed transition
// when there is one.
func (r *run) stepRow() *store.Step {
	r.recordMu.Lock()
	defer r.recordMu.Unlock()
	return r.stepRowLocked()
}

func (r *run) stepRowLocked() *store.Step {
	d := &r.d
	if n := len(d.freeRows); n > 0 {
		row := d.freeRows[n-1]
		d.freeRows = d.freeRows[:n-1]
		return row
	}
	return new(store.Step)
}

// idempotent reports whether step i may run again after a crash without a
// person's say: model calls have no side effects; a tool step only when its
// tool says idempotent: true.
func (r *run) idempotent(i int) bool {
	return r.b.kinds[i].idempotent(r, i)
}

// pureStart reports whether step i's start needs no commit of its own: a
// tool step whose tool has no effect and is idempotent. Were the process
// to die while it runs, the resumed run would run it again whether or not
// its start was journaled (same attempt, same idempotency key), so the
// start is committed with whatever comes next — in a linear flow, the
// step's own settlement. A run whose first step is pure is thus created by
// the commit that settles that step (Temporal journals local activities
// the same way: their completion only).
func (r *run) pureStart(i int) bool {
	spec := &r.b.specs[i]
	return r.b.kinds[i].takesArgs && spec.Effect == tool.EffectNone && spec.Idempotent
}

// barrierPending reports whether the transition being assembled holds
// anything that must be committed before another step runs: anything but
// the run's start and the starts of steps.
func (r *run) barrierPending() bool {
	r.recordMu.Lock()
	defer r.recordMu.Unlock()
	d := &r.d
	if d.pendRun != nil || len(d.pendAppr) > 0 {
		return true
	}
	for _, st := range d.pendSteps {
		if st.Status != trace.StepRunning {
			return true
		}
	}
	for i := range d.pendEv {
		switch d.pendEv[i].Kind {
		case trace.RunStarted, trace.StepStarted:
		default:
			return true
		}
	}
	return false
}

// flush commits the transition assembled so far. It is the barrier the
// engine passes before any side effect and before it waits: nothing is
// acted on, or acknowledged, until it is committed.
func (r *run) flush() {
	if !r.d.on {
		return
	}
	r.recordMu.Lock()
	defer r.recordMu.Unlock()
	r.flushLocked()
}

func (r *run) flushLocked() {
	d := &r.d
	if len(d.pendEv) == 0 && len(d.pendSteps) == 0 && d.pendRun == nil && len(d.pendAppr) == 0 {
		return
	}
	if r.interrupted() {
		// the process is stopping: the run stays as its last commit left it.
		r.discardLocked()
		return
	}
	if lost := d.lost.Load(); lost != nil && r.storeErr == nil {
		// the lease is gone: the run stops where its last committed
		// transition left it, for whoever takes it up next.
		r.storeErr = lost
	}
	if r.storeErr == nil {
		d.pendSteps = lastPerStep(d.pendSteps)
		t := store.Transition{RunID: r.id, Version: d.version, Events: d.pendEv, Run: d.pendRun, Steps: d.pendSteps, Approvals: d.pendAppr, Create: d.create,
			Now: r.e.cfg.Clock.Now()}
		var was *transitionPayloads
		if r.sealing() {
			was = payloadsOfTransition(&t)
		}
		t.Redact(r.e.cfg.Redactor) // its events were hidden as they were recorded
		if was != nil {
			r.sealTransitionLocked(&t, was)
		}
		if err := r.e.cfg.Store.Commit(r.storeCtx, &t); err != nil {
			first, last := int64(0), int64(0)
			if n := len(d.pendEv); n > 0 {
				first, last = d.pendEv[0].Seq, d.pendEv[n-1].Seq
			}
			r.storeErr = fmt.Errorf("commit events %d-%d of run %s: %w", first, last, r.id, err)
			if errors.Is(err, store.ErrConflict) {
				r.storeErr = fault.New(fault.Conflict, fmt.Errorf("run %s was advanced by another process (events %d-%d not committed): %w", r.id, first, last, err))
			}
			r.cancel(r.storeErr)
		} else {
			d.version, d.create = t.Version, nil
		}
	}
	r.discardLocked()
}

// discardLocked empties the transition being assembled (after its commit,
// or instead of it), keeping its step rows for reuse.
func (r *run) discardLocked() {
	d := &r.d
	clear(d.pendEv)
	d.freeRows = append(d.freeRows, d.pendSteps...)
	clear(d.pendSteps)
	clear(d.pendAppr)
	d.pendEv, d.pendSteps, d.pendAppr, d.pendRun, d.pendSeal = d.pendEv[:0], d.pendSteps[:0], d.pendAppr[:0], nil, nil
}

// lastPerStep keeps the newest projection row of each step (a pure step's
// start and settlement share a transition; only the settlement is the
// step's state). Rows keep their order.
func lastPerStep(rows []*store.Step) []*store.Step {
	newer := func(i int) bool {
		for _, later := range rows[i+1:] {
			if later.StepID == rows[i].StepID {
				return true
			}
		}
		return false
	}
	if len(rows) > 16 { // many steps settled at once (skips): no quadratic scan
		last := make(map[string]int, len(rows))
		for i, row := range rows {
			last[row.StepID] = i
		}
		newer = func(i int) bool { return last[rows[i].StepID] != i }
	}
	out := rows[:0]
	for i, row := range rows {
		if !newer(i) {
			out = append(out, row)
		}
	}
	clear(rows[len(out):])
	return out
}

// beginAttempt journals that attempt n of step j starts, before its call:
// after a crash the resumed run knows which attempt (and idempotency key)
// was in flight.
func (r *run) beginAttempt(j *job, n int) {
	if !r.d.on || n <= 1 && r.d.firstAttempt[j.index] == 0 {
		return
	}
	s := j.step
	r.recordMu.Lock()
	row := r.stepRowLocked()
	*row = store.Step{RunID: r.id, StepID: s.ID, Type: string(s.Type), Status: trace.StepRunning, Attempt: n,
		Idempotent: r.idempotent(j.index), StartedAt: r.steps[j.index].started}
	r.d.pendSteps = append(r.d.pendSteps, row)
	r.flushLocked()
	r.recordMu.Unlock()
}

// park makes step i wait for a person: an approval (kind approval), a
// decision about a step whose effect is unknown after a crash, or a step
// whose failure on_error escalates (its error is st.err). It returns the
// approval, which is committed with the next transition.
func (r *run) park(i int, kind store.ApprovalKind, j *job) *store.Approval {
	s := r.f.Steps[i]
	st := &r.steps[i]
	r.m.Park(i, kind, st.attempts)
	r.setStatus(i, r.m.Status(i))
	a := &store.Approval{ID: uuid.Must(uuid.NewV7()).String(), RunID: r.id, StepID: s.ID, Kind: kind,
		Status: store.ApprovalPending, Tool: s.Tool, CreatedAt: r.e.cfg.Clock.Now()}
	var asked string
	if j != nil {
		if r.b.kinds[i].takesArgs {
			a.Args, _ = value.AppendCanonical(nil, j.in.args)
		}
		asked = j.message
	}
	a.Message = asked
	switch {
	case kind == store.KindUnknown:
		// the step's own message says what it does; this says what is unknown.
		a.Message = r.unknownMessage(i)
		if note := r.d.notes[i]; note != "" {
			a.Message += ". " + strings.ToUpper(note[:1]) + note[1:]
		}
		if asked != "" {
			a.Message += " (the step: " + asked + ")"
		}
	case kind == store.KindSubmission:
		a.Message, a.Tool = submissionMessage(s), s.Adapter
	case kind == store.KindEscalation || kind == store.KindPremise:
		a.Message = fmt.Sprintf("step %s failed after %d %s: %s; approve to run it again, reject to fail the run with this error, or settle it with the output it should have produced",
			s.ID, st.attempts, plural(st.attempts, "attempt", "attempts"), st.err.Message)
	case a.Message != "":
	case r.b.kinds[i].takesArgs:
		a.Message = fmt.Sprintf("step %s wants to call tool %s", s.ID, s.Tool)
	default:
		a.Message = fmt.Sprintf("step %s asks for approval", s.ID)
	}
	r.d.parked = append(r.d.parked, a)
	r.recordMu.Lock()
	r.d.pendAppr = append(r.d.pendAppr, a)
	r.recordMu.Unlock()
	r.stageStep(i)
	ev := trace.Event{Kind: trace.ApprovalRequested, StepID: s.ID, StepType: string(s.Type), Status: string(r.m.Status(i)),
		Tool: s.Tool, Decision: string(kind), Attempt: st.attempts}
	if kind == store.KindEscalation || kind == store.KindPremise {
		ev.ErrorClass, ev.Error, ev.Origin = string(st.err.Class), st.err.Message, st.err.Origin
	}
	r.record(ev)
	return a
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// decide carries out the machine's answer for step i at dispatch
// (sched.Machine.Answer, from the step's latest approval). It reports
// whether the step was settled (or parked) here; false means: run it.
func (r *run) decide(i int) (handled bool) {
	s := r.f.Steps[i]
	a := r.d.decisions[s.ID]
	var answered sched.Answered
	if a != nil {
		answered = sched.Answered{Status: a.Status, Kind: a.Kind}
	}
	ans := r.m.Answer(i, answered)
	switch ans.Do {
	case sched.RunIt:
		if !ans.Decided {
			return false
		}
	case sched.AskAgent:
		r.parkSubmission(i, a)
		return true
	case sched.AskPerson:
		j := r.prepare(i)
		if j.badMessage {
			return false // nobody is asked: the step fails with why (work)
		}
		r.park(i, store.KindApproval, j)
		return true
	}
	delete(r.d.decisions, s.ID)
	r.m.Decided(i)
	r.record(trace.Event{Kind: trace.ApprovalDecided, StepID: s.ID, StepType: string(s.Type), Status: string(a.Status), Decision: string(a.Kind)})
	st := &r.steps[i]
	st.started = r.e.cfg.Clock.Now()
	switch ans.Do {
	case sched.Reject:
		msg := "rejected"
		if a.DecidedBy != "" {
			msg += " by " + a.DecidedBy
		}
		if a.Comment != "" {
			msg += ": " + a.Comment
		}
		if ans.Escalated && st.err != nil {
			// the run fails with the step's own error.
			re := *st.err
			re.Message += " (escalated to a person, and " + msg + ")"
			r.settle(&outcome{index: i, attempts: st.attempts, err: &re, origin: re.Origin})
			return true
		}
		r.settle(&outcome{index: i, attempts: st.attempts, err: fault.BusinessErr(errors.New(msg)), origin: trace.OriginEngine})
		return true
	case sched.SettleOutput:
		var out any
		if err := json.Unmarshal(a.Output, &out); err != nil {
			r.settle(&outcome{index: i, attempts: st.attempts, err: fault.BusinessErr(fmt.Errorf("settled output is not JSON: %w", err)), origin: trace.OriginEngine})
			return true
		}
		r.settleWith(i, out)
		return true
	case sched.Approve:
		r.settleWith(i, map[string]any{"approved": true, "comment": a.Comment, "decided_by": a.DecidedBy})
		return true
	case sched.RunAgain:
		r.d.firstAttempt[i] = ans.Attempt
	case sched.RunApproved:
		if r.d.approved == nil {
			r.d.approved = map[int][]byte{}
		}
		r.d.approved[i] = a.Args
	}
	return false
}

// settleWith settles step i with out as if it had produced it. out must
// fit the step's output_schema (each item's, for a for_each step).
func (r *run) settleWith(i int, out any) {
	s := r.f.Steps[i]
	o := &outcome{index: i, status: trace.StepSucceeded, output: out, attempts: r.steps[i].attempts}
	err := checkSettled(s, out)
	if err == nil {
		err = r.settledGate(s, out)
	}
	if err != nil && sched.WaitsFor(s) == sched.Agent {
		r.refuseSubmission(i, out, err)
		return
	}
	if err == nil {
		err = r.finishOutput(s, out, o)
	}
	if err != nil {
		o.err, o.origin = err, trace.OriginEngine
	}
	r.settle(o)
}

// checkSettled checks an output a person provided against the step's
// output_schema.
func checkSettled(s *flow.Step, out any) error {
	if s.OutputSchema == nil {
		return nil
	}
	if s.ForEach == nil {
		if err := s.OutputSchema.Validate(out); err != nil {
			return fault.BusinessErr(fmt.Errorf("settled output %w", err))
		}
		return nil
	}
	list, ok := out.([]any)
	if !ok {
		return fault.BusinessErr(fmt.Errorf("settled output of for_each step %s must be a list of its items' outputs", s.ID))
	}
	for k, item := range list {
		if err := s.OutputSchema.Validate(item); err != nil {
			return fault.BusinessErr(fmt.Errorf("settled output: item %d %w", k, err))
		}
	}
	return nil
}

// startLease keeps the run's lease alive while it executes: a heartbeat
// renews it every third of ttl. A renewal that fails for another reason
// than a lost lease (the database is away) is retried until only a third
// of ttl is left before the lease expires. When the lease is lost, or that
// time comes, the run stops and commits nothing more (see loseLease).
//
// Lease time is Config.Clock's, as every time the engine gives the store:
// the heartbeat's timers are the clock's, and each renewal passes the
// clock's Now, so a test drives the whole lease on a virtual clock.
func (r *run) startLease(ttl time.Duration) {
	if !r.d.on || r.d.owner == "" || ttl <= 0 {
		return
	}
	clock := r.e.cfg.Clock
	ctx, stop := context.WithCancel(context.Background())
	hb := &heartbeat{stop: stop}
	r.d.beat = hb
	leased := r.d.leased
	if leased.IsZero() {
		leased = clock.Now()
	}
	every := ttl / 3
	// A timer, not a goroutine: a run that ends before its first renewal
	// (most do) costs no goroutine start and stop.
	hb.timer = clock.AfterFunc(every, func() {
		hb.mu.Lock()
		defer hb.mu.Unlock()
		if hb.stopped {
			return
		}
		if r.uncreated() {
			// a pure first step runs before its run is stored: there is
			// no lease to renew yet, and the commit that creates the run
			// leases it from its own time on.
			leased = clock.Now()
			hb.timer.Reset(every)
			return
		}
		var err error
		if leased, err = r.renewLease(ctx, ttl, leased.Add(ttl-every)); err != nil {
			if ctx.Err() == nil {
				r.loseLease(err)
			}
			return
		}
		hb.timer.Reset(every)
	})
}

// uncreated reports whether the run's creating commit is still to come.
func (r *run) uncreated() bool {
	r.recordMu.Lock()
	defer r.recordMu.Unlock()
	return r.d.create != nil
}

// heartbeat renews a run's lease from a timer; mu is held by a renewal in
// progress, so stopping waits for it.
type heartbeat struct {
	mu      sync.Mutex
	stopped bool
	timer   Timer
	stop    context.CancelFunc
}

// renewLease renews the run's lease, retrying failures other than a lost
// lease until giveUp (on the engine's clock), and returns the time it
// renewed at: the Now it gave the store, from which the new lease runs.
// Its error is the run's: fault.Conflict, saying why the lease is gone.
func (r *run) renewLease(ctx context.Context, ttl time.Duration, giveUp time.Time) (time.Time, error) {
	clock := r.e.cfg.Clock
	p := &store.LeaseParams{RunID: r.id, Owner: r.d.owner, TTL: ttl}
	for {
		p.Now = clock.Now()
		callCtx, cancel := clock.WithDeadline(ctx, giveUp)
		err := r.e.cfg.Store.RenewLease(callCtx, p)
		cancel()
		switch {
		case err == nil:
			return p.Now, nil
		case ctx.Err() != nil:
			return time.Time{}, ctx.Err()
		case errors.Is(err, store.ErrConflict):
			return time.Time{}, fault.New(fault.Conflict, fmt.Errorf("run %s: the lease was lost to another process; this one stops", r.id))
		}
		wait := min(giveUp.Sub(clock.Now()), ttl/12)
		if wait <= 0 {
			return time.Time{}, fault.New(fault.Conflict, fmt.Errorf("run %s: the lease could not be renewed before it expires (%w); this process stops and commits nothing more: the run stays where its last committed transition left it, for a resume once the store is reachable, or a worker", r.id, err))
		}
		if clock.Sleep(ctx, wait) != nil {
			return time.Time{}, ctx.Err()
		}
	}
}

// loseLease stops a run whose lease is gone: nothing more is committed
// (flushLocked refuses) and its steps in flight are cancelled, so the run
// stays as its last committed transition left it, for whoever takes it up.
func (r *run) loseLease(err error) {
	var fe *fault.Error
	if !errors.As(err, &fe) {
		fe = &fault.Error{Class: fault.Conflict, Err: err}
	}
	r.d.lost.Store(fe)
	r.cancel(fe)
}

// endLease stops the heartbeat and releases the lease.
func (r *run) endLease() {
	hb := r.d.beat
	if hb == nil {
		return
	}
	hb.stop() // a renewal in progress returns at once
	hb.timer.Stop()
	hb.mu.Lock()
	hb.stopped = true
	hb.mu.Unlock()
	r.d.beat = nil
	_ = r.e.cfg.Store.ReleaseLease(r.storeCtx, r.id, r.d.owner)
}
