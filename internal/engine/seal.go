package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/redact/seal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/value"
)

// Payloads at rest (docs/durability.md "Secrets at rest"): every record a
// transition stores is redacted, as views show it. With a Config.Codec,
// each payload a resume reads that the redaction changed is also sealed
// (its clear form, encrypted), and the sealed payloads of a transition
// travel in one sealed event of that transition. A resume opens them
// (openSealed) and puts each back in place of the redacted payload it
// was sealed beside (unsealed), so it reads what the live run read.

// sealing reports whether this run seals what it redacts.
func (r *run) sealing() bool { return r.d.on && r.e.cfg.Codec != nil }

// sealLocked seals clear, the payload at place at whose stored form is
// redacted, unless the redaction left it as it was. A payload that cannot
// be sealed (over seal.MaxPlainBytes) stays redacted only. r.recordMu
// must be held.
func (r *run) sealLocked(at string, clear, redacted []byte) {
	if p, ok := r.e.seal(r.id, at, clear, redacted); ok {
		r.d.pendSeal = append(r.d.pendSeal, p)
	}
}

// seal seals clear, the payload of run runID at place at whose stored
// form is redacted, unless the redaction left it as it was (ok false) or
// it cannot be sealed (over seal.MaxPlainBytes: it stays redacted only).
func (e *Engine) seal(runID, at string, clear, redacted []byte) (p journal.SealedPayload, ok bool) {
	return sealWith(e.cfg.Codec, runID, at, clear, redacted)
}

// sealWith is Engine.seal with codec.
func sealWith(codec *seal.Codec, runID, at string, clear, redacted []byte) (p journal.SealedPayload, ok bool) {
	if bytes.Equal(clear, redacted) {
		return p, false
	}
	sum := journal.Digest(redacted)
	s, err := codec.Seal(clear, journal.AAD(runID, at, sum))
	if err != nil {
		return p, false
	}
	return journal.SealedPayload{At: at, Redacted: sum, Sealed: s}, true
}

// Payload is a payload of a run that a caller outside the run's engine
// stores redacted (a person's decision: a settle's output, a comment):
// its place, its clear form and the form stored.
type Payload struct {
	At              string
	Clear, Redacted []byte
}

// DecisionPayloads are the places of a decision on approval id, its
// output (the settle value) and its comment, for SealBeside.
func DecisionPayloads(id string, output, redactedOutput []byte, comment, redactedComment string) []Payload {
	return []Payload{
		{At: "approval/" + id + "/output", Clear: output, Redacted: redactedOutput},
		{At: "approval/" + id + "/comment", Clear: []byte(comment), Redacted: []byte(redactedComment)},
	}
}

// maxSealTries bounds SealBeside's commits that meet a newer version.
const maxSealTries = 5

// SealBeside seals with codec those of ps that their redaction changed
// and commits them in one sealed event of run runID, on its own, as the
// engine seals a run's own payloads: a resume puts each clear form back
// in place of the redacted one (approvals' outputs and comments), so it
// reads what the person wrote. Call it before the redacted payloads are
// stored, so no resume can read them first. Nothing is written when no
// payload changed. A commit that meets a newer run version is tried
// again; errors are the store's.
func SealBeside(ctx context.Context, st store.Store, codec *seal.Codec, runID string, ps []Payload, now time.Time) error {
	if codec == nil {
		return nil
	}
	var sealed []journal.SealedPayload
	for _, p := range ps {
		if sp, ok := sealWith(codec, runID, p.At, p.Clear, p.Redacted); ok {
			sealed = append(sealed, sp)
		}
	}
	if len(sealed) == 0 {
		return nil
	}
	data := journal.EncodeSealed(&journal.Sealed{Payloads: sealed})
	for try := 1; ; try++ {
		run, err := st.GetRun(ctx, runID)
		if err != nil {
			return fmt.Errorf("engine: seal a decision of run %s: %w", runID, err)
		}
		t := &store.Transition{RunID: runID, Version: run.Version, Now: now, Events: []*trace.Event{{Seq: run.LastSeq + 1, Time: now,
			Kind: trace.PayloadsSealed, RunID: runID, Flow: run.Flow, Data: data}}}
		err = st.Commit(ctx, t)
		if err == nil {
			return nil
		}
		if !errors.Is(err, store.ErrConflict) || try == maxSealTries {
			return fmt.Errorf("engine: seal a decision of run %s: %w", runID, err)
		}
	}
}

// begun reports whether a run's journal shows that it started: any event
// but the sealed one an enqueued run's input may have.
func begun(events []*trace.Event) bool {
	for _, ev := range events {
		if ev.Kind != trace.PayloadsSealed {
			return true
		}
	}
	return false
}

// sealInput seals the run's input, which createParams stored redacted,
// for the run's first transition.
func (r *run) sealInput(in any) {
	if !r.sealing() {
		return
	}
	clear, err := value.AppendCanonical(nil, in)
	if err != nil {
		return
	}
	r.recordMu.Lock()
	r.sealLocked("input", clear, r.e.cfg.Redactor.Bytes(clear))
	r.recordMu.Unlock()
}

// eventPayloads is what of an event a resume reads and redaction may
// change: its Data and its call record's output, compensation args and
// agent transcript.
type eventPayloads struct {
	data        string
	out, comp   []byte
	plan, rem   []byte
	args, obs   string
	call, agent bool
	turn        []byte // the agent turn's record as turnJSON writes it
}

func payloadsOf(e *trace.Event) eventPayloads {
	p := eventPayloads{data: e.Data}
	if m := e.Remediation; m != nil && m.Call != nil {
		p.rem = m.Call.Args
	}
	if t := e.AgentTurn; t != nil {
		p.turn = turnJSON(t)
	}
	if c := e.Call; c != nil {
		p.call, p.out = true, c.Output
		if x := c.Effect; x != nil && x.Compensation != nil {
			p.comp = x.Compensation.Args
		}
		if a := c.Agent; a != nil {
			p.agent, p.args, p.obs, p.plan = true, a.Args, a.Observation, a.Plan
		}
	}
	return p
}

// sealEventLocked seals what redacting e changed of was (its payloads
// before). r.recordMu must be held.
func (r *run) sealEventLocked(e *trace.Event, was eventPayloads) {
	if was.data != e.Data {
		r.sealLocked("event/"+strconv.FormatInt(e.Seq, 10)+"/data", []byte(was.data), []byte(e.Data))
	}
	if m := e.Remediation; m != nil && m.Call != nil {
		// the compensation a remediation made, as a resume remakes it
		r.sealLocked("event/"+strconv.FormatInt(e.Seq, 10)+"/remediation.args", was.rem, m.Call.Args)
	}
	if t := e.AgentTurn; t != nil && was.turn != nil {
		// the turn a resume rebuilds the transcript from, whole
		r.sealLocked("event/"+strconv.FormatInt(e.Seq, 10)+"/agent_turn", was.turn, turnJSON(t))
	}
	if c := e.Call; c != nil && was.call {
		at := "call/" + c.Key + "/"
		r.sealLocked(at+"output", was.out, c.Output)
		if x := c.Effect; x != nil && x.Compensation != nil {
			r.sealLocked(at+"compensation.args", was.comp, x.Compensation.Args)
		}
		if a := c.Agent; a != nil && was.agent {
			if was.args != a.Args {
				r.sealLocked(at+"agent.args", []byte(was.args), []byte(a.Args))
			}
			if was.obs != a.Observation {
				r.sealLocked(at+"agent.observation", []byte(was.obs), []byte(a.Observation))
			}
			// a waiting execute_plan call's progress: the outputs of its
			// completed steps, the args of those that wait.
			r.sealLocked(at+"agent.plan", was.plan, a.Plan)
		}
	}
}

// transitionPayloads are the payloads of a transition's records that a
// resume reads, before Transition.Redact.
type transitionPayloads struct {
	steps [][2][]byte // output, input
	appr  [][2][]byte // args, output
	input []byte
}

func payloadsOfTransition(t *store.Transition) *transitionPayloads {
	p := &transitionPayloads{}
	for _, st := range t.Steps {
		p.steps = append(p.steps, [2][]byte{st.Output, st.Input})
	}
	for _, a := range t.Approvals {
		p.appr = append(p.appr, [2][]byte{a.Args, a.Output})
	}
	if t.Create != nil {
		p.input = t.Create.Input
	}
	return p
}

// sealTransitionLocked seals what Transition.Redact changed of t (was:
// its payloads before), and adds the transition's sealed event, when it
// has sealed payloads, after its other events. r.recordMu must be held.
func (r *run) sealTransitionLocked(t *store.Transition, was *transitionPayloads) {
	for i, st := range t.Steps {
		r.sealLocked("step/"+st.StepID+"/output", was.steps[i][0], st.Output)
		r.sealLocked("step/"+st.StepID+"/input", was.steps[i][1], st.Input)
	}
	for i, a := range t.Approvals {
		r.sealLocked("approval/"+a.ID+"/args", was.appr[i][0], a.Args)
		r.sealLocked("approval/"+a.ID+"/output", was.appr[i][1], a.Output)
	}
	if t.Create != nil {
		r.sealLocked("input", was.input, t.Create.Input)
	}
	if len(r.d.pendSeal) == 0 {
		return
	}
	r.seq++
	t.Events = append(t.Events, &trace.Event{Seq: r.seq, Time: r.e.cfg.Clock.Now(), Kind: trace.PayloadsSealed, RunID: r.id,
		Data: journal.EncodeSealed(&journal.Sealed{Payloads: r.d.pendSeal})})
	r.d.pendSeal = nil
}

// unsealed are the clear payloads of a run's sealed events, by place and
// by the digest of the redacted payload each replaces.
type unsealed map[string]map[string][]byte

// openSealed opens the sealed payloads of events (a run's journal) with
// the engine's codec. A payload sealed with a key the codec lacks refuses
// the resume: a business error with fault.HintNeedsKey naming the run and
// the key; one that does not open is fault.Damaged. Nothing is changed.
func (e *Engine) openSealed(runID string, events []*trace.Event, into unsealed) error {
	for _, ev := range events {
		if ev.Kind != trace.PayloadsSealed {
			continue
		}
		s, err := journal.DecodeSealed(ev.Data)
		if err != nil {
			return fault.New(fault.Damaged, fmt.Errorf("engine: run %s: event %d: %w", runID, ev.Seq, err))
		}
		for _, p := range s.Payloads {
			clear, err := e.cfg.Codec.Open(p.Sealed, journal.AAD(runID, p.At, p.Redacted))
			var missing *seal.MissingKeyError
			if errors.As(err, &missing) {
				have := "and no encryption key is configured"
				if len(missing.Have) > 0 {
					have = "which rein.yaml encryption: does not name (it names " + strings.Join(missing.Have, ", ") + ")"
				}
				return fault.Hinted(fault.Business, fault.Hint{Code: fault.HintNeedsKey, RunID: runID, KeyID: missing.KeyID},
					fmt.Errorf("engine: run %s was not resumed: its payload %s (event %d) was sealed with key %s, %s: restore key %s in rein.yaml encryption: (as key_id, or listed under old_keys with its key_file or key_env), then resume again; the run is as it was", runID, p.At, ev.Seq, missing.KeyID, have, missing.KeyID))
			}
			if err != nil {
				return fault.New(fault.Damaged, fmt.Errorf("engine: run %s: payload %s of event %d: %w", runID, p.At, ev.Seq, err))
			}
			if into[p.At] == nil {
				into[p.At] = map[string][]byte{}
			}
			into[p.At][p.Redacted] = clear
		}
	}
	return nil
}

// bytes returns the clear payload sealed beside b at place at, or b.
func (u unsealed) bytes(at string, b []byte) []byte {
	if m := u[at]; m != nil {
		if clear, ok := m[journal.Digest(b)]; ok {
			return clear
		}
	}
	return b
}

func (u unsealed) string(at, s string) string {
	if m := u[at]; m != nil {
		if clear, ok := m[journal.Digest([]byte(s))]; ok {
			return string(clear)
		}
	}
	return s
}

// events puts the clear payloads back into a run's events.
func (u unsealed) events(events []*trace.Event) {
	if len(u) == 0 {
		return
	}
	for _, ev := range events {
		if ev.Data != "" {
			ev.Data = u.string("event/"+strconv.FormatInt(ev.Seq, 10)+"/data", ev.Data)
		}
		if ev.Call != nil {
			u.call(ev.Call)
		}
		if m := ev.Remediation; m != nil && m.Call != nil {
			m.Call.Args = u.bytes("event/"+strconv.FormatInt(ev.Seq, 10)+"/remediation.args", m.Call.Args)
		}
		if t := ev.AgentTurn; t != nil {
			u.turn("event/"+strconv.FormatInt(ev.Seq, 10)+"/agent_turn", ev)
		}
	}
}

// turn puts the clear agent turn sealed at place at back into ev.
func (u unsealed) turn(at string, ev *trace.Event) {
	m := u[at]
	if m == nil {
		return
	}
	clear, ok := m[journal.Digest(turnJSON(ev.AgentTurn))]
	if !ok {
		return
	}
	var t journal.Turn
	if json.Unmarshal(clear, &t) == nil {
		ev.AgentTurn = &t
	}
}

// turnJSON is the form of an agent turn's record that is sealed (the
// clear turn) and digested (the redacted one): encoding/json's, which
// reads back to the same bytes.
func turnJSON(t *journal.Turn) []byte {
	b, err := json.Marshal(t)
	if err != nil {
		return nil
	}
	return b
}

func (u unsealed) call(c *journal.Call) {
	at := "call/" + c.Key + "/"
	c.Output = u.bytes(at+"output", c.Output)
	if x := c.Effect; x != nil && x.Compensation != nil {
		x.Compensation.Args = u.bytes(at+"compensation.args", x.Compensation.Args)
	}
	if a := c.Agent; a != nil {
		a.Args = u.string(at+"agent.args", a.Args)
		a.Observation = u.string(at+"agent.observation", a.Observation)
		a.Plan = u.bytes(at+"agent.plan", a.Plan)
	}
}

// records puts the clear payloads back into a run's input, step rows,
// approvals and call records.
func (u unsealed) records(run *store.Run, rows []*store.Step, approvals []*store.Approval, calls map[string][]*store.Call) {
	if len(u) == 0 {
		return
	}
	run.Input = u.bytes("input", run.Input)
	for _, st := range rows {
		st.Output = u.bytes("step/"+st.StepID+"/output", st.Output)
		st.Input = u.bytes("step/"+st.StepID+"/input", st.Input)
	}
	for _, a := range approvals {
		a.Args = u.bytes("approval/"+a.ID+"/args", a.Args)
		a.Output = u.bytes("approval/"+a.ID+"/output", a.Output)
		a.Comment = u.string("approval/"+a.ID+"/comment", a.Comment)
	}
	for _, cs := range calls {
		for _, c := range cs {
			u.call(c)
		}
	}
}
