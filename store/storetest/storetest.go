package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// Harness tells the suite how to make and damage stores of one backend.
type Harness struct {
	// New returns an empty, open store; the suite closes it.
	New func(t *testing.T) store.Store
	// CorruptEvent overwrites the stored record of (runID, seq) with the given journal version and raw data, for decode-error cases; nil skips them.
	CorruptEvent func(t *testing.T, s store.Store, runID string, seq int64, version int, data []byte)
	// CorruptStep overwrites the stored record of step stepID of runID (its JSON, not its payloads) with the given journal version and raw data; nil skips those cases.
	CorruptStep func(t *testing.T, s store.Store, runID, stepID string, version int, rec []byte)
}

// Run runs the conformance suite against h. Every subtest gets its own store
// and runs in parallel with the others.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("storetest: Harness.New is nil")
	}
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"CreateGet", testCreateGet},
		{"CreateDuplicateID", testCreateDuplicateID},
		{"CreateIdempotent", testCreateIdempotent},
		{"CreateLeased", testCreateLeased},
		{"RoundTripBytes", testRoundTripBytes},
		{"ListRuns", testListRuns},
		{"ListRunsDefaultLimit", testListRunsDefaultLimit},
		{"Tenants", testTenants},
		{"NotFound", testNotFound},
		{"Commit", testCommit},
		{"CommitStaleVersion", testCommitStaleVersion},
		{"CommitDuplicateSeq", testCommitDuplicateSeq},
		{"CommitUnnumbered", testCommitUnnumbered},
		{"CommitCancelled", testCommitCancelled},
		{"CommitRace", testCommitRace},
		{"CommitManyRuns", testCommitManyRuns},
		{"CommitCreates", testCommitCreates},
		{"Events", testEvents},
		{"Steps", testSteps},
		{"Calls", testCalls},
		{"CallsAtomic", testCallsAtomic},
		{"CallsCreate", testCallsCreate},
		{"Blobs", testBlobs},
		{"CorruptEvent", testCorruptEvent},
		{"NewerJournalVersion", testNewerJournalVersion},
		{"NewerStepVersion", testNewerStepVersion},
		{"RecordsKeepEveryField", testRecordsKeepEveryField},
		{"Approvals", testApprovals},
		{"DecideApproval", testDecideApproval},
		{"DecideApprovalErrors", testDecideApprovalErrors},
		{"DecideApprovalOfFinishedRun", testDecideApprovalOfFinishedRun},
		{"ApprovalAskedAgain", testApprovalAskedAgain},
		{"EscalationKind", testEscalationKind},
		{"Lease", testLease},
		{"LeaseExpiry", testLeaseExpiry},
		{"LeaseTakeFrom", testLeaseTakeFrom},
		{"NowRequired", testNowRequired},
		{"RecordsAtCallersTime", testRecordsAtCallersTime},
		{"FinalCommitDropsLease", testFinalCommitDropsLease},
		{"ClaimRuns", testClaimRuns},
		{"ClaimRunsLimit", testClaimRunsLimit},
		{"ClaimRunsConcurrent", testClaimRunsConcurrent},
		{"Prune", testPrune},
		{"Sessions", testSessions},
		{"PruneStatus", testPruneStatus},
		{"PruneRetention", testPruneRetention},
		{"PruneBlobs", testPruneBlobs},
		{"Finished", testFinished},
		{"Budget", testBudget},
		{"BudgetConcurrent", testBudgetConcurrent},
		{"Invalidated", testInvalidated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, h)
		})
	}
}

// open returns a fresh store from h, closed when t ends.
func open(t *testing.T, h Harness) store.Store {
	t.Helper()
	s := h.New(t)
	if s == nil {
		t.Fatal("Harness.New returned nil")
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// create makes a run with id and flow "f" (status pending unless given).
func create(t *testing.T, s store.Store, p *store.CreateRunParams) *store.Run {
	t.Helper()
	if p.Flow == "" {
		p.Flow = "f"
	}
	if p.FlowHash == "" {
		p.FlowHash = "sha256:" + p.Flow
	}
	if p.Input == nil {
		p.Input = json.RawMessage(`{}`)
	}
	r, created, err := s.CreateRun(t.Context(), p)
	if err != nil {
		t.Fatalf("CreateRun(%s): %v", p.ID, err)
	}
	if !created {
		t.Fatalf("CreateRun(%s): created=false for a new run", p.ID)
	}
	if r.ID != p.ID {
		t.Fatalf("CreateRun(%s): ID = %q", p.ID, r.ID)
	}
	return r
}

func get(t *testing.T, s store.Store, id string) *store.Run {
	t.Helper()
	r, err := s.GetRun(t.Context(), id)
	if err != nil {
		t.Fatalf("GetRun(%s): %v", id, err)
	}
	return r
}

// commit commits tr and checks that its Version moved on by one.
func commit(t *testing.T, s store.Store, tr *store.Transition) {
	t.Helper()
	before := tr.Version
	if err := s.Commit(t.Context(), tr); err != nil {
		t.Fatalf("Commit(%s, version %d): %v", tr.RunID, before, err)
	}
	if tr.Version != before+1 {
		t.Fatalf("Commit(%s): t.Version = %d after committing on %d, want %d", tr.RunID, tr.Version, before, before+1)
	}
}

// event returns an event of run at seq.
func event(runID string, seq int64, kind trace.Kind, stepID string) *trace.Event {
	return &trace.Event{
		Seq:    seq,
		Time:   time.Date(2025, 1, 2, 3, 4, 5, int(seq)*1000, time.UTC),
		Kind:   kind,
		RunID:  runID,
		Flow:   "f",
		StepID: stepID,
	}
}

func events(t *testing.T, s store.Store, runID string, after int64, limit int) []*trace.Event {
	t.Helper()
	evs, err := s.Events(t.Context(), runID, after, limit)
	if err != nil {
		t.Fatalf("Events(%s, %d, %d): %v", runID, after, limit, err)
	}
	return evs
}

func steps(t *testing.T, s store.Store, runID string) []*store.Step {
	t.Helper()
	st, err := s.Steps(t.Context(), runID)
	if err != nil {
		t.Fatalf("Steps(%s): %v", runID, err)
	}
	return st
}

func seqs(evs []*trace.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

func ids(runs []*store.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

func stepIDs(st []*store.Step) []string {
	out := make([]string, len(st))
	for i, s := range st {
		out[i] = s.StepID
	}
	return out
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// wantErr fails unless err is target.
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: err = %v, want %v", what, err, target)
		return
	}
	// the class callers map to HTTP statuses and MCP errors agrees.
	if got, want := fault.ClassOf(err), fault.ClassOf(target); got != want {
		t.Errorf("%s: fault.ClassOf(%v) = %s, want %s (the class of %v)", what, err, got, want, target)
	}
}

// jsonEqual reports whether a and b hold the same JSON value (both empty
// counts as equal).
func jsonEqual(a, b []byte) bool {
	if len(bytes.TrimSpace(a)) == 0 || len(bytes.TrimSpace(b)) == 0 {
		return len(bytes.TrimSpace(a)) == len(bytes.TrimSpace(b))
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// near reports whether a and b are within a millisecond (backends store
// times at millisecond precision or better).
func near(a, b time.Time) bool {
	d := a.Sub(b)
	return d > -time.Millisecond && d < time.Millisecond
}

// bigJSON returns a JSON string value of about n bytes, distinct per tag.
func bigJSON(tag string, n int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"tag":"` + tag + `","pad":"`)
	for b.Len() < n {
		b.WriteString("abcdefghijklmnopqrstuvwxyz0123456789")
	}
	b.WriteString(`"}`)
	return json.RawMessage(b.String())
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func ctxCancelled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
