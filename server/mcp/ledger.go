package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// LedgerFlow is the flow name of a Server's ledger: the run that journals
// its served calls (`rein runs list --flow mcp`).
const LedgerFlow = "mcp"

// ledger journals the calls one Server serves in one run of its store,
// created with the first call: each call is a call record
// (journal.Call, a call event) at step <tool>, attempt n — n counting the
// Server's calls — so its idempotency key, <ledger run id>/<tool>/<n>, is
// unique across processes and restarts (the run id is a fresh UUIDv7).
// The run is waiting while the Server serves (nothing resumes it: it has no
// flow) and succeeded once it closed; one a killed process left waiting
// may hold a call recorded as started and never settled, whose effect is
// unknown. Without a store (a Server of Options.Tools alone) nothing is
// journaled and the keys still use the id.
type ledger struct {
	st    store.Store
	id    string
	input json.RawMessage
	red   *redact.Redactor

	mu      sync.Mutex
	created bool
	closed  bool
	version int64
	seq     int64
}

func newLedger(st store.Store, red *redact.Redactor, input any) *ledger {
	l := &ledger{st: st, id: uuid.Must(uuid.NewV7()).String(), red: red}
	l.input, _ = json.Marshal(input)
	return l
}

// commit journals c: the record of a call, which replaces an earlier
// record of its key (started → settled). The first commit creates the
// run. An error means c is not on record.
func (l *ledger) commit(ctx context.Context, c *journal.Call) error {
	if l == nil || l.st == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("the call could not be journaled: the server closed its ledger, run %s", l.id)
	}
	err := l.commitLocked(ctx, c)
	if err != nil && !errors.Is(err, store.ErrDamaged) {
		// the run moved on or was created by a commit that failed after
		// (a backend may create it first): read where it stands, once.
		if run, gerr := l.st.GetRun(ctx, l.id); gerr == nil {
			l.created, l.version, l.seq = true, run.Version, run.LastSeq
			err = l.commitLocked(ctx, c)
		}
	}
	if err != nil {
		return fmt.Errorf("the call could not be journaled in run %s of the store: %w", l.id, err)
	}
	return nil
}

func (l *ledger) commitLocked(ctx context.Context, c *journal.Call) error {
	now := time.Now() // the store decides by the caller's clock
	ev := &trace.Event{Kind: trace.CallRecorded, Seq: l.seq + 1, Time: now, RunID: l.id, Flow: LedgerFlow,
		StepID: c.StepID, Tool: c.Name, Attempt: c.Attempt, Status: string(c.Status), Call: c}
	ev.Redact(l.red)
	t := &store.Transition{RunID: l.id, Version: l.version, Events: []*trace.Event{ev}, Now: now}
	if !l.created {
		t.Create = &store.CreateRunParams{ID: l.id, Flow: LedgerFlow, Input: l.red.Bytes(l.input), Status: trace.RunWaiting, Now: now}
	}
	if err := l.st.Commit(ctx, t); err != nil {
		return err
	}
	l.created, l.version, l.seq = true, t.Version, l.seq+1
	return nil
}

// close marks the ledger's run succeeded: the Server serves no more.
func (l *ledger) close() error {
	if l == nil || l.st == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.created || l.closed {
		return nil
	}
	l.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now()
	err := l.st.Commit(ctx, &store.Transition{RunID: l.id, Version: l.version, Now: now,
		Run: &store.RunUpdate{Status: trace.RunSucceeded, Reason: "the MCP server stopped"}})
	if errors.Is(err, store.ErrNotFound) { // pruned meanwhile
		return nil
	}
	return err
}
