package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// Remediation takes back what a run did once a premise failed, or once a
// run whose flow says on_failure: compensate failed (the saga). Each
// executed call with an effect is undone (reversible: its tool's undo),
// compensated (compensatable: its compensate), or frozen (irreversible:
// the objects it wrote or sent are marked invalid in the journal, and a
// person is asked when its tool is tagged money, compliance or
// user-facing). Undo and compensate calls go through the invocation
// pipeline — args schema, the run's gate, a key that extends the call's
// ("…/compensate") — after the controls of their own risk tier when the flow has tiers
// (remedyControls: a reviewer at tier 3, a person at tier 4), and are
// journaled as call effects of their own.
// Every action is journaled as a remediation record. A compensation that
// fails, or that the gate refuses, is escalated to a person (an approval
// of kind escalation, id "<step key>/<action>") and never retried blindly:
// approve makes it once more, settle says a person took it back by hand,
// reject leaves it as it is. While an escalation waits, the run waits.
// Each undo and compensation is committed as dispatched (its call record,
// started) before its tool runs, and its outcome with its remediation
// record as soon as it returns; a remediation carried on after a crash
// reads them (remedy_dispatch.go): what settled is not made again, and
// one dispatched without an outcome is made again with the same key when
// its tool is idempotent or read-only, and is otherwise unknown, an
// escalation like the others.

// Action is what remediation does about one executed call.
type Action string

// Actions.
const (
	ActUndo       Action = "undo"       // reversible: its tool's undo
	ActCompensate Action = "compensate" // compensatable: its tool's compensate
	ActFreeze     Action = "freeze"     // irreversible: mark invalid, escalate where it matters
	ActKeep       Action = "keep"       // unaffected, or nothing to take back (a read)
)

// Premise names the saga's remediation records.
const SagaPremise = "saga"

// Classify returns the action for an affected call e: undo or compensate
// when its tool declares one and the call returned ok, keep for a read,
// freeze otherwise.
func Classify(e *journal.Effect) Action {
	if e.Effect == string(tool.EffectRead) || e.Effect == string(tool.EffectNone) {
		return ActKeep
	}
	if c := e.Compensation; c != nil && e.Outcome == string(invoke.OK) {
		switch c.Kind {
		case string(ActUndo):
			return ActUndo
		case string(ActCompensate):
			return ActCompensate
		}
	}
	return ActFreeze
}

// Remedy is one executed call and the action to take about it.
type Remedy struct {
	Effect journal.Effect
	Action Action
}

// escalationID is the approval id of the remediation of the call keyed
// key in run runID: the key without the run, then the action (and, for
// the escalation of a compensation made again, "/2", "/3", …).
func escalationID(runID, key string, a Action) string {
	return strings.TrimPrefix(key, runID+"/") + "/" + string(a)
}

// remedyState is what the journal and the approvals say about a run's
// remediations so far.
type remedyState struct {
	effects  []*journal.Effect // in journal order, the latest record per key
	byKey    map[string]*journal.Effect
	last     map[string]*journal.Remediation // the latest remediation record per key
	lastSeq  map[string]int64                // the journal seq of last's record
	dispatch map[string]dispatched           // key → the latest record of its undo or compensation
	decided  map[string]*store.Approval      // the latest approval per id
	failures map[string]int                  // key → failed (or unknown) remediation records
	tier     int                             // the highest risk tier the journal reached
}

// readRemedies folds the run's journal and approvals.
func (e *Engine) readRemedies(ctx context.Context, runID string) (*remedyState, error) {
	events, err := e.cfg.Store.Events(ctx, runID, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("engine: read the journal of run %s: %w", runID, err)
	}
	// compensations are made with the args the live run recorded.
	open := unsealed{}
	if err := e.openSealed(runID, events, open); err != nil {
		return nil, err
	}
	open.events(events)
	st := &remedyState{byKey: map[string]*journal.Effect{}, last: map[string]*journal.Remediation{}, lastSeq: map[string]int64{},
		dispatch: map[string]dispatched{}, decided: map[string]*store.Approval{}, failures: map[string]int{}}
	for _, ev := range events {
		switch ev.Kind {
		case trace.CallEffect, trace.CallRecorded:
			st.noteDispatch(ev)
			eff, ok, err := journal.EffectOf(ev)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", store.ErrDamaged, err)
			}
			if !ok {
				continue
			}
			if prev, ok := st.byKey[eff.Key]; ok {
				*prev = *eff
				continue
			}
			st.byKey[eff.Key] = eff
			st.effects = append(st.effects, eff)
		case trace.RiskTier:
			if c, err := journal.DecodeTierChange(ev.Data); err == nil {
				st.tier = max(st.tier, c.Tier)
			}
		case trace.Remediated:
			m, err := journal.DecodeRemediation(ev)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", store.ErrDamaged, err)
			}
			st.last[m.Key], st.lastSeq[m.Key] = m, ev.Seq
			if m.Status == journal.RemedyFailed || m.Status == journal.RemedyUnknown {
				st.failures[m.Key]++
			}
		}
	}
	approvals, err := e.cfg.Store.Approvals(ctx, &store.ListApprovalsParams{RunID: runID})
	if err != nil {
		return nil, fmt.Errorf("engine: read the approvals of run %s: %w", runID, err)
	}
	for _, a := range approvals {
		if p := st.decided[a.StepID]; p == nil || !a.CreatedAt.Before(p.CreatedAt) {
			st.decided[a.StepID] = a
		}
	}
	return st, nil
}

// sagaRemedies are the remedies of a failed run with on_failure:
// compensate: every executed call with an effect other than a read (and
// not a compensation itself), latest completed first.
func (st *remedyState) sagaRemedies() []Remedy { return SagaRemedies(st.effects) }

// SagaRemedies are the remedies of a failed run with on_failure:
// compensate whose executed calls are effects, in the order they
// completed: every call with an effect other than a read (and not a
// compensation itself), latest completed first, each with its action
// (Classify). A driver outside the runner (package temporal) carries them
// out with Compensate.
func SagaRemedies(effects []*journal.Effect) []Remedy {
	var out []Remedy
	for i := len(effects) - 1; i >= 0; i-- {
		eff := effects[i]
		if eff.Remedy != "" {
			continue
		}
		if a := Classify(eff); a != ActKeep {
			out = append(out, Remedy{Effect: *eff, Action: a})
		}
	}
	return out
}

// open are the remedies whose latest record waits on a person (failed,
// escalated or unknown), and those whose undo or compensation was
// dispatched after their latest record (or with none: a remediation
// stopped mid-call), which a resume decides as every call in doubt
// (settleDispatch); latest first.
func (st *remedyState) open() []Remedy {
	var out []Remedy
	for i := len(st.effects) - 1; i >= 0; i-- {
		eff := st.effects[i]
		if m := st.last[eff.Key]; m != nil && m.Escalation != "" && escalated(m.Status) {
			out = append(out, Remedy{Effect: *eff, Action: Action(m.Action)})
		} else if c := st.unsettled(eff.Key); c != nil && (m == nil || !escalated(m.Status)) {
			out = append(out, Remedy{Effect: *eff, Action: Action(c.Remedy)})
		}
	}
	return out
}

// escalated reports whether a remediation record of status s waits on a
// person's decision (its Escalation).
func escalated(s string) bool {
	return s == journal.RemedyFailed || s == journal.RemedyEscalated || s == journal.RemedyUnknown
}

// remediate carries out remedies in order for premise, journaling each,
// and returns the escalations that wait for a person. A remedy whose
// latest record is settled (done, frozen, resolved) is not acted on again;
// one that was escalated acts on the person's decision, or keeps waiting;
// one whose undo or compensation was dispatched after its latest record
// is settled from that dispatch's record (settleDispatch). Each remedy's
// records are committed before the next is acted on.
func (r *run) remediate(ctx context.Context, premise string, remedies []Remedy, st *remedyState) []*store.Approval {
	if r.inv != nil && invoke.InvalidOf(ctx) == nil {
		ctx = invoke.WithInvalid(ctx, r.inv) // compensations are checked as every call
	}
	var waiting []*store.Approval
	var invalid []*journal.Remediation // the records whose objects the registry gets
	defer func() {
		r.flush()
		r.registerInvalid(invalid)
	}()
	for i := range remedies {
		r.flush()
		rm := &remedies[i]
		eff := &rm.Effect
		prior := st.last[eff.Key]
		esc := escalationID(r.id, eff.Key, rm.Action)
		why := premise
		if prior != nil && prior.Premise != "" {
			why = prior.Premise // an escalation carries on under its own premise
		}
		rec := journal.Remediation{Premise: why, Key: eff.Key, StepID: eff.StepID, Tool: eff.Tool, Action: string(rm.Action)}
		if prior != nil && len(prior.Invalid) > 0 {
			invalid = append(invalid, prior) // a crash may have come between its commit and the registry
		}
		if prior != nil {
			switch prior.Status {
			case journal.RemedyDone, journal.RemedyFrozen, journal.RemedyResolved:
				continue
			case journal.RemedyFailed, journal.RemedyEscalated, journal.RemedyUnknown:
				a := st.decided[prior.Escalation]
				if a == nil || a.Status == store.ApprovalPending {
					if a != nil {
						waiting = append(waiting, a)
					}
					continue
				}
				if a.Status != store.ApprovalApproved || rm.Action == ActFreeze {
					rec.Status, rec.Decision, rec.Comment, rec.DecidedBy, rec.Invalid = journal.RemedyResolved, string(a.Status), a.Comment, a.DecidedBy, prior.Invalid
					r.recordRemedy(&rec)
					continue
				}
				// approved: the compensation is made once more; a failure
				// is the n-th escalation of it.
				rec.Decision, rec.Comment, rec.DecidedBy = string(a.Status), a.Comment, a.DecidedBy
				esc += "/" + strconv.Itoa(st.failures[eff.Key]+1)
			}
		}
		if c := st.unsettled(eff.Key); c != nil && rm.Action != ActFreeze {
			if done, a := r.settleDispatch(ctx, rm, &rec, esc, c); done {
				if a != nil {
					waiting = append(waiting, a)
				}
				continue
			}
		}
		if a := r.remedyOne(ctx, rm, &rec, esc, st.tier); a != nil {
			waiting = append(waiting, a)
		}
		if len(rec.Invalid) > 0 {
			invalid = append(invalid, &rec)
		}
	}
	return waiting
}

// registerInvalid records the objects the remediation records recs marked
// invalid in the store's registry of invalidated resources, across runs
// (store.Invalidation), once their records are committed: right after the
// commit rather than in it, idempotently (a row is kept per resource, run
// and call), so a crash between the two is repaired by the next
// remediation of the run, which registers the objects of every earlier
// record again. A record's "call:<key>" object names the call's own
// output, which no later run renders, and is left out.
func (r *run) registerInvalid(recs []*journal.Remediation) {
	if len(recs) == 0 || r.storeErr != nil {
		return
	}
	rows := invalidRows(r.tenant, r.id, recs, r.e.cfg.Clock.Now())
	if err := r.e.cfg.Store.Invalidate(r.storeCtx, rows); err != nil {
		r.storeErr = fmt.Errorf("engine: register the resources remediation of run %s invalidated (run the remediation again to register them): %w", r.id, err)
	}
}

// invalidRows are the registry rows of the objects the remediation
// records recs (of run runID, tenant's) marked invalid, at now; a
// record's "call:<key>" object names the call's own output and is left
// out.
func invalidRows(tenant, runID string, recs []*journal.Remediation, now time.Time) []*store.Invalidation {
	var rows []*store.Invalidation
	for _, rec := range recs {
		for _, res := range rec.Invalid {
			if strings.HasPrefix(res, "call:") {
				continue
			}
			rows = append(rows, &store.Invalidation{Tenant: tenant, Resource: res, RunID: runID, CallKey: rec.Key, Premise: rec.Premise,
				Reason: fmt.Sprintf("call %s of tool %s cannot be taken back: it was frozen when premise %s failed", rec.Key, rec.Tool, rec.Premise), At: now})
		}
	}
	return rows
}

// frozenObjects are the objects a frozen call marks invalid: what it
// wrote and sent, and its own output ("call:<key>").
func frozenObjects(eff *journal.Effect) []string {
	return append(append(append([]string{}, eff.Writes...), eff.Sends...), "call:"+eff.Key)
}

// remedyOne acts on one remedy, records it, and returns the escalation it
// raised, if any. floor is the run's risk tier, the least an undo or
// compensation is assessed at (remedyControls).
func (r *run) remedyOne(ctx context.Context, rm *Remedy, rec *journal.Remediation, esc string, floor int) *store.Approval {
	eff := &rm.Effect
	if rm.Action == ActFreeze {
		rec.Status = journal.RemedyFrozen
		rec.Invalid = frozenObjects(eff)
		if !safety.Escalates(eff.Tags) {
			r.recordRemedy(rec)
			return nil
		}
		rec.Status, rec.Escalation = journal.RemedyEscalated, esc
		a := r.escalateRemedy(rec, fmt.Sprintf("call %s of tool %s (tagged %s) cannot be taken back: it is frozen and its objects %s are marked invalid; a person must put it right, then approve (done) or reject",
			eff.Key, eff.Tool, strings.Join(eff.Tags, ", "), strings.Join(rec.Invalid, ", ")))
		r.recordRemedy(rec)
		return a
	}
	c := eff.Compensation
	rec.Call = c
	req, spec, err := r.remedyRequest(eff, c, rec.Action)
	if err == nil {
		// a person who approved the escalation approved this exact call.
		approved := rec.Decision == string(store.ApprovalApproved)
		cctx, wait := r.remedyControls(ctx, req, &spec, rec, floor, approved)
		if wait != "" {
			rec.Status, rec.Escalation = journal.RemedyEscalated, esc
			a := r.escalateRemedy(rec, fmt.Sprintf("the %s of call %s (tool %s, by tool %s) %s; approve to make it, settle once a person took it back by hand, or reject to leave it",
				rm.Action, eff.Key, eff.Tool, c.Tool, wait))
			r.recordRemedy(rec)
			return a
		}
		req.Approved = approved
		if err = r.callRemedy(cctx, req, &spec, rec); err == nil {
			rec.Status = journal.RemedyDone
			r.recordRemedy(rec)
			return nil
		}
		if ae := (*invoke.ApprovalError)(nil); errors.As(err, &ae) {
			// the gate wants a person: the call waits for one, it did not fail.
			rec.Status, rec.Escalation, rec.Control, rec.Reason = journal.RemedyEscalated, esc, journal.ControlPerson, ae.Reason
			a := r.escalateRemedy(rec, fmt.Sprintf("the %s of call %s (tool %s, by tool %s) needs a person's approval (%s); approve to make it, settle once a person took it back by hand, or reject to leave it",
				rm.Action, eff.Key, eff.Tool, c.Tool, ae.Reason))
			r.recordRemedy(rec)
			return a
		}
	}
	return r.remedyFailed(rm, rec, esc, err.Error())
}

// remedyFailed records rec, the remedy rm whose undo or compensation
// failed with message msg, as failed and escalated (esc), and returns the
// escalation.
func (r *run) remedyFailed(rm *Remedy, rec *journal.Remediation, esc, msg string) *store.Approval {
	eff := &rm.Effect
	rec.Status, rec.Error, rec.Escalation = journal.RemedyFailed, r.e.cfg.Redactor.String(msg), esc
	a := r.escalateRemedy(rec, fmt.Sprintf("the %s of call %s (tool %s) failed: %s; it is not retried blindly: approve to make it once more, settle once a person took it back by hand, or reject to leave it",
		rm.Action, eff.Key, eff.Tool, rec.Error))
	r.recordRemedy(rec)
	return a
}

// remedyRequest is the request of the undo or compensation c of the call
// eff, and its tool's spec: its args are what the call it takes back was
// given and returned, with their provenance.
func (r *run) remedyRequest(eff *journal.Effect, c *journal.Compensation, action string) (*invoke.Request, tool.Spec, error) {
	if c == nil {
		return nil, tool.Spec{}, fmt.Errorf("tool %s declares no %s", eff.Tool, action)
	}
	if c.Error != "" {
		return nil, tool.Spec{}, fmt.Errorf("the %s could not be rendered: %s", c.Kind, c.Error)
	}
	t, ok := r.e.cfg.Tools.Lookup(c.Tool)
	if !ok {
		return nil, tool.Spec{}, fmt.Errorf("tool %s, the %s of %s, is not registered", c.Tool, c.Kind, eff.Tool)
	}
	var args any
	if len(c.Args) > 0 {
		if err := json.Unmarshal(c.Args, &args); err != nil {
			return nil, tool.Spec{}, fmt.Errorf("the %s's args do not decode: %w", c.Kind, err)
		}
	}
	spec := t.Spec()
	req := &invoke.Request{Tool: t, Args: args, Recorder: (*callRecorder)(r), Pausable: true,
		At: invoke.Position{RunID: r.id, StepID: eff.StepID, Attempt: eff.Attempt, Parent: eff.Key, Remedy: c.Kind}}
	if orig, ok := r.e.cfg.Tools.Lookup(eff.Tool); ok {
		os := orig.Spec()
		req.Provenance = safety.CompensationProvenance(&os, c.Kind, safety.FromRecord(eff.Provenance))
	}
	if r.b.gated() {
		req.Gate = r.b.gate
	}
	if len(spec.InputSchema) > 0 {
		if sch, err := flow.CompileSchema(c.Tool+" input_schema", spec.InputSchema); err == nil && sch != nil {
			req.Input = sch
		}
	}
	return req, spec, nil
}

// callRemedy makes the call req through the pipeline — the gate sees it —
// and fills what it touched into rec.
func (r *run) callRemedy(ctx context.Context, req *invoke.Request, spec *tool.Spec, rec *journal.Remediation) error {
	out, _, err := r.e.pipe.Call(ctx, req)
	if err != nil {
		return err
	}
	var touched journal.Effect
	safety.Touches(&touched, spec, req.Args, out)
	rec.Touched = slices.Concat(touched.Writes, touched.Sends, touched.Reads)
	return nil
}

// escalateRemedy stages the approval a person decides about rec.
func (r *run) escalateRemedy(rec *journal.Remediation, msg string) *store.Approval {
	a := &store.Approval{ID: uuid.Must(uuid.NewV7()).String(), RunID: r.id, StepID: rec.Escalation, Kind: store.KindEscalation,
		Status: store.ApprovalPending, Message: msg, CreatedAt: r.e.cfg.Clock.Now()}
	if rec.Call != nil {
		a.Tool, a.Args = rec.Call.Tool, rec.Call.Args
	}
	// the remediation record names the escalation; no approval_requested
	// event, which would park the step itself in a replay of the journal.
	r.recordMu.Lock()
	r.d.pendAppr = append(r.d.pendAppr, a)
	r.recordMu.Unlock()
	return a
}

// recordRemedy journals rec (the recorder hides secrets in it, as in
// every event).
func (r *run) recordRemedy(rec *journal.Remediation) {
	r.record(trace.Event{Kind: trace.Remediated, StepID: rec.StepID, Tool: rec.Tool, Status: rec.Status, Decision: rec.Action,
		Error: rec.Error, Remediation: rec})
}

// runRemedies carries out, at the end of a run, the saga of a failed run
// whose flow says on_failure: compensate (saga), or the remediations that
// waited on a person, and returns the escalations still waiting.
func (r *run) runRemedies(ctx context.Context, saga bool) []*store.Approval {
	r.flush() // the call effects are in the journal
	if r.storeErr != nil {
		return nil
	}
	st, err := r.e.readRemedies(ctx, r.id)
	if err != nil {
		r.storeErr = err
		return nil
	}
	remedies := st.open()
	if saga {
		remedies = st.sagaRemedies()
	}
	return r.remediate(ctx, SagaPremise, remedies, st)
}

// Remediate carries out remedies (from an impact analysis) on the durable
// run runID because premise failed, with the flow f the run pinned: each
// undo and compensation through the pipeline, the run's gate and its
// tier's controls (remedyControls), each
// freeze marked in the journal, each action a remediation record. A step
// the run has not settled is settled as skipped first (a remediated run
// starts nothing more). When something is escalated the run waits for a
// person (rein runs approve|reject|settle RUN <escalation>); resuming it
// once they decided carries the remediation on, and the run ends as it had
// ended before. A run another process holds is a conflict error; a run
// still running is one too (cancel it first). A remedy already carried out
// (done, frozen, resolved) is not acted on again.
func (e *Engine) Remediate(ctx context.Context, f *flow.Flow, runID, premise string, remedies []Remedy) (*Result, error) {
	if store.IsEphemeral(e.cfg.Store) {
		return nil, errors.New("engine: Remediate needs a durable store (engine.Config.Store)")
	}
	run, err := e.cfg.Store.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("engine: remediate run %s: %w", runID, err)
	}
	if h := FlowHash(f); h != run.FlowHash {
		return nil, fmt.Errorf("engine: run %s started with flow %s (sha256 %.12s), not the one given (sha256 %.12s): remediate with the pinned flow text", runID, run.Flow, run.FlowHash, h)
	}
	b, err := e.bind(f)
	if err != nil {
		return nil, err
	}
	leased := e.cfg.Clock.Now()
	held := run
	if run, err = e.acquire(ctx, runID, leased); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, fault.New(fault.Conflict, fmt.Errorf("engine: run %s is being advanced by %s: wait for it, or cancel it, before remediating: %w", runID, held.LeaseOwner, err))
		}
		return nil, fmt.Errorf("engine: lease run %s: %w", runID, err)
	}
	if run.Status == trace.RunRunning || run.Status == trace.RunPending {
		e.release(runID)
		return nil, fault.New(fault.Conflict, fmt.Errorf("engine: run %s is %s: cancel it (rein runs cancel) before remediating, so that no step starts meanwhile", runID, run.Status))
	}
	rows, err := e.cfg.Store.Steps(ctx, runID)
	if err != nil {
		e.release(runID)
		return nil, fmt.Errorf("engine: read steps of run %s: %w", runID, err)
	}
	var input any
	_ = json.Unmarshal(run.Input, &input)
	r := newRun(e, f, b, runID, input)
	r.tenant = run.Tenant
	r.d = durability{on: true, version: run.Version, owner: e.cfg.Owner, leased: leased, firstAttempt: map[int]int{}, decisions: map[string]*store.Approval{}}
	r.seq = run.LastSeq
	r.begin(ctx)
	r.startLease(e.cfg.LeaseTTL)
	defer r.recycle()
	defer r.end()
	r.skipUnsettled(rows, premise)
	st, err := e.readRemedies(ctx, runID)
	if err != nil {
		r.endLease()
		return nil, err
	}
	pend := r.remediate(ctx, premise, remedies, st)
	if len(pend) > 0 && run.Status != trace.RunWaiting {
		r.recordMu.Lock()
		r.d.pendRun = &store.RunUpdate{Status: trace.RunWaiting, Error: run.Error, Usage: run.Usage}
		r.recordMu.Unlock()
		r.record(trace.Event{Kind: trace.RunParked, Flow: f.Name, Status: string(trace.RunWaiting)})
	}
	r.flush()
	r.delivered()
	r.endLease()
	if r.storeErr != nil {
		return nil, r.storeErr
	}
	return e.Status(ctx, runID)
}

// skipUnsettled settles as skipped every step of the run that has not
// settled, saying why.
func (r *run) skipUnsettled(rows []*store.Step, premise string) {
	settled := map[string]bool{}
	for _, row := range rows {
		settled[row.StepID] = row.Status.Settled()
	}
	now := r.e.cfg.Clock.Now()
	for _, s := range r.f.Steps {
		if settled[s.ID] {
			continue
		}
		msg := "not run: premise " + premise + " failed and the run was remediated"
		why, _ := json.Marshal(&RunError{Class: fault.Cancelled, Origin: trace.OriginEngine, Step: s.ID, Message: msg})
		row := &store.Step{RunID: r.id, StepID: s.ID, Type: string(s.Type), Status: trace.StepSkipped, Error: why, SettledAt: now}
		r.recordMu.Lock()
		r.d.pendSteps = append(r.d.pendSteps, row)
		r.recordMu.Unlock()
		r.record(trace.Event{Kind: trace.StepSettled, StepID: s.ID, StepType: string(s.Type), Status: string(trace.StepSkipped), Error: msg})
	}
}
