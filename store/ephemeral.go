package store

import (
	"context"

	"github.com/reinhq/rein/trace"
)

// Ephemeral is the Store that keeps nothing: runs live in memory only and
// cannot be resumed, listed or approved. The engine uses it when no store
// is configured, and then does none of the work durability needs: no
// transitions, no commits, no leases, no outputs encoded for a journal.
var Ephemeral Store = ephemeral{}

// IsEphemeral reports whether s keeps nothing: s is nil or Ephemeral, or a
// wrapper (metrics, tracing) whose Unwrap() Store method, followed as far
// as it goes, leads to one of those.
func IsEphemeral(s Store) bool {
	for {
		switch w := s.(type) {
		case nil, ephemeral:
			return true
		case interface{ Unwrap() Store }:
			s = w.Unwrap()
		default:
			return false
		}
	}
}

type ephemeral struct{}

func (ephemeral) CreateRun(_ context.Context, p *CreateRunParams) (*Run, bool, error) {
	return &Run{ID: p.ID, Flow: p.Flow, Status: trace.RunPending}, true, nil
}
func (ephemeral) GetRun(context.Context, string) (*Run, error) { return nil, ErrNotFound }
func (ephemeral) ListRuns(context.Context, *ListRunsParams) ([]*Run, error) {
	return nil, nil
}
func (ephemeral) Commit(_ context.Context, t *Transition) error { t.Version++; return nil }
func (ephemeral) Events(context.Context, string, int64, int) ([]*trace.Event, error) {
	return nil, ErrNotFound
}
func (ephemeral) Steps(context.Context, string) ([]*Step, error) { return nil, ErrNotFound }
func (ephemeral) Calls(context.Context, string, string) ([]*Call, error) {
	return nil, ErrNotFound
}
func (ephemeral) Blob(context.Context, string) ([]byte, error) { return nil, ErrNotFound }
func (ephemeral) Approvals(context.Context, *ListApprovalsParams) ([]*Approval, error) {
	return nil, nil
}
func (ephemeral) DecideApproval(context.Context, *DecideApprovalParams) (*Approval, error) {
	return nil, ErrNotFound
}
func (ephemeral) AcquireLease(context.Context, *LeaseParams) (*Run, error) { return nil, ErrNotFound }
func (ephemeral) RenewLease(context.Context, *LeaseParams) error           { return nil }
func (ephemeral) Sessions(context.Context, *ListSessionsParams) ([]*Session, error) {
	return nil, nil
}
func (ephemeral) ReleaseLease(context.Context, string, string) error      { return nil }
func (ephemeral) ClaimRuns(context.Context, *ClaimParams) ([]*Run, error) { return nil, nil }
func (ephemeral) Prune(context.Context, *PruneParams) (*PruneResult, error) {
	return &PruneResult{}, nil
}

// The ephemeral store keeps no ledger: the engine reserves nothing for a
// run it does not journal.
func (ephemeral) Reserve(_ context.Context, p *ReserveParams) (*Reservation, error) {
	return &Reservation{Tenant: p.Tenant, Day: p.Day, Key: p.Key, RunID: p.RunID, State: Reserved}, nil
}
func (ephemeral) Settle(context.Context, *SettleParams) error             { return nil }
func (ephemeral) ReleaseRun(context.Context, string) (int, error)         { return 0, nil }
func (ephemeral) Spend(context.Context, string, string) ([]*Spend, error) { return nil, nil }
func (ephemeral) Invalidate(context.Context, []*Invalidation) error       { return nil }
func (ephemeral) Invalidated(context.Context, *InvalidatedParams) ([]*Invalidation, error) {
	return nil, nil
}
func (ephemeral) ClearInvalidated(context.Context, *ClearInvalidatedParams) (int, error) {
	return 0, nil
}
func (ephemeral) Close() error { return nil }
