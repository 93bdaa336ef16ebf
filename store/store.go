// Package store is the persistence port of rein (docs/ARCHITECTURE.md "The
// store port"). A run
// is an append-only journal of events plus projections — the run row, one
// row per step, pending approvals — and every transition of a run is one
// atomic Commit that appends its events and updates the projections, so a
// crash loses nothing that was committed. The engine never acts on a
// transition that was not committed.
//
// Call records (Call, journal.Call) describe each invocation a run
// records — a tool step's call, for_each items, plan steps, agent calls,
// compensations — and travel in the journal as call events, so they never
// disagree with it; Calls folds them. Besides the journal, the port holds content-addressed blobs (payloads
// above DefaultBlobThreshold), approvals (a person's decision about a step,
// or about a step whose effect is unknown after a crash), leases (one writer
// per run until expiry; ClaimRuns hands ready runs to workers) and
// retention (Prune). Commit checks the run's version, so a writer that fell
// behind gets ErrConflict instead of overwriting a newer state.
//
// Backends: store/sqlite (embedded default, modernc.org/sqlite) and
// store/postgres (pgx). Each registers itself with Register when its
// package is imported, and Open picks one by the DSN (SchemeOf), so this
// package links no database driver. Ephemeral keeps nothing.
// store/storetest is the conformance suite every backend passes.
//
// Every backend maps its own errors to ErrNotFound, ErrConflict and
// ErrDamaged, so callers test with errors.Is.
//
// Time is the caller's. A store never reads a clock to decide: every
// method that decides by time (a lease's expiry in AcquireLease,
// RenewLease, ClaimRuns and a run created leased; retention in Prune)
// takes the time from its params' Now, and refuses a zero Now with
// ErrNoTime. The timestamps a store only records (CreatedAt, UpdatedAt,
// DecidedAt, a journal row's time) are the params' Now too, and the
// store's own clock only when Now is zero. A caller can therefore run
// leases on a virtual clock. Processes that share a store (PostgreSQL)
// judge one another's leases by their own clocks: a lease one process
// took until T is expired for another once that process's clock reads T,
// so clock skew between hosts eats into a lease's margin (the engine
// renews a lease every third of its TTL and stops acting when a third is
// left: the hosts' clocks must agree to well within that third).
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/trace"
)

// The sentinels carry their fault class, so errors.Is(err, ErrConflict)
// and fault.ClassOf(err) == fault.Conflict agree on any error that wraps
// them (unless an outer error gives it another class on purpose).
var (
	// ErrNotFound: the run, step, approval or blob does not exist. Its
	// class is fault.NotFound.
	ErrNotFound = fault.New(fault.NotFound, errors.New("not found"))
	// ErrConflict: another writer got there first — the run's version moved
	// on, its lease is held by someone else, an approval was already
	// decided. The loser backs off and re-reads. Its class is
	// fault.Conflict.
	ErrConflict = fault.New(fault.Conflict, errors.New("conflict"))
	// ErrDamaged: the store's data is damaged (a truncated or overwritten
	// database file, a write-ahead log whose committed transactions would
	// be dropped, a page that fails its check). Nothing more is read or
	// written; restore the store from a backup. Its class is
	// fault.Damaged.
	ErrDamaged = fault.New(fault.Damaged, errors.New("the run store is damaged"))
	// ErrNoTime: a method that decides by time (a lease's expiry, a claim,
	// retention) was called with a zero Now in its params. The store
	// changed nothing; the caller passes its clock's time.
	ErrNoTime = errors.New("the caller's time (Now) is missing: a store decides by the caller's clock, never its own")
)

// JournalVersion is journal.Version, the version of the records this
// binary writes. A record with a higher version is refused with an error
// naming the run and the record, never guessed at.
const JournalVersion = journal.Version

// DefaultBlobThreshold is the payload size above which outputs and inputs
// go to the content-addressed blob table and rows refer to them by sha256.
const DefaultBlobThreshold = 16 << 10

// Store is the port. Methods are grouped by entity. Implementations are
// safe for concurrent use by many runs; Commit for one run is called by
// that run's scheduler only.
type Store interface {
	// Runs.
	//
	// CreateRun inserts a run. When p.IdempotencyKey is set and a run with
	// that key exists, it returns that run and created=false instead.
	CreateRun(ctx context.Context, p *CreateRunParams) (run *Run, created bool, err error)
	// GetRun returns one run (ErrNotFound).
	GetRun(ctx context.Context, id string) (*Run, error)
	// ListRuns returns runs, newest first.
	ListRuns(ctx context.Context, p *ListRunsParams) ([]*Run, error)

	// Journal and projections.
	//
	// Commit appends t.Events and applies t.Run, t.Steps and
	// t.Approvals in one transaction, on the condition that the run's version is still
	// t.Version (ErrConflict otherwise); on success the run's version is
	// t.Version+1 and t.Version is updated to it. A transition that gives
	// the run a final status also drops its lease and closes the run's
	// pending approvals: each is recorded as rejected, with
	// RunUpdate.Reason as its comment, in the same transaction (a finished
	// run waits for nobody; DecideApproval refuses it with ErrConflict). It returns only once the
	// transition is as durable as the backend promises. t and everything
	// it points to are the caller's again once Commit returns (the engine
	// reuses them for its next transition): a backend copies what it keeps.
	Commit(ctx context.Context, t *Transition) error
	// Events returns a run's events with Seq > after, in order; limit ≤ 0
	// means all. A record that does not decode is an error naming the run
	// and sequence.
	Events(ctx context.Context, runID string, after int64, limit int) ([]*trace.Event, error)
	// Steps returns the step projection of a run, in first-started order.
	// Outputs stored as blobs are read back transparently.
	Steps(ctx context.Context, runID string) ([]*Step, error)
	// Calls returns a run's call records (see Call): the records of its
	// call events, after those a rein of journal version 1 kept in a
	// table of their own, one per Key — the last one committed
	// (journal.FoldCalls) — in the order their keys were first committed;
	// stepID, when not empty, keeps that step's. ErrNotFound when the run
	// does not exist; a run without records has none (nil, nil).
	Calls(ctx context.Context, runID, stepID string) ([]*Call, error)

	// Blobs (content-addressed, by hex sha256).
	Blob(ctx context.Context, sha256 string) ([]byte, error)

	// Approvals.
	//
	// Approvals lists a run's approvals (all when p.Status is empty).
	Approvals(ctx context.Context, p *ListApprovalsParams) ([]*Approval, error)
	// DecideApproval settles a pending approval: ErrNotFound when there is
	// none for the step, ErrConflict when it was already decided. It bumps
	// the run's version (an engine holding the old one must re-read), and
	// when it settles the last pending approval of a waiting run, makes the
	// run pending: ready for a worker (ClaimRuns) or a resume.
	DecideApproval(ctx context.Context, p *DecideApprovalParams) (*Approval, error)

	// Leases.
	//
	// A lease taken or renewed at p.Now for p.TTL expires at exactly
	// p.Now+p.TTL: a caller whose Now is before that finds it held, one
	// whose Now is at or after it finds it expired, whatever the real
	// clock says. A zero p.Now is ErrNoTime.
	//
	// AcquireLease makes p.Owner the run's only writer until p.Now+p.TTL:
	// ErrConflict when another owner holds a lease unexpired at p.Now.
	// It bumps and returns the run's version.
	AcquireLease(ctx context.Context, p *LeaseParams) (*Run, error)
	// RenewLease extends a lease p.Owner holds, unexpired at p.Now, to
	// p.Now+p.TTL (ErrConflict if it was lost or expired).
	RenewLease(ctx context.Context, p *LeaseParams) error
	// ReleaseLease drops a held lease; releasing a lost lease is not an error.
	ReleaseLease(ctx context.Context, runID, owner string) error
	// ClaimRuns leases up to p.Limit runs that are ready to advance at
	// p.Now (status pending or running, no lease unexpired at p.Now) to
	// p.Owner until p.Now+p.TTL, skipping rows other claimers hold, oldest
	// first.
	ClaimRuns(ctx context.Context, p *ClaimParams) ([]*Run, error)

	// Retention.
	//
	// Prune deletes finished runs (succeeded, failed, cancelled) settled
	// before p.Before, and at p.Now past their own Retention, with their
	// events, steps, call records, approvals and the blobs no other run
	// refers to. A zero p.Now is ErrNoTime.
	Prune(ctx context.Context, p *PruneParams) (*PruneResult, error)

	// Budgets (budget.go): the tenants' daily spend ledger.
	//
	// Reserve reserves p's upper bound under p's limits, atomically with
	// every other reserver of the tenant's day: the refusal is a
	// fault.Budget error wrapping a *BudgetError, and nothing is written.
	// A key the tenant already holds is the same call again: a reservation
	// still open is returned as it is (counted once), a settled or
	// released one is reserved again (its settled amounts stay).
	Reserve(ctx context.Context, p *ReserveParams) (*Reservation, error)
	// Settle adds what the call of the key used to its settled amounts and
	// closes its reservation (ErrNotFound for a key never reserved).
	Settle(ctx context.Context, p *SettleParams) error
	// ReleaseRun closes the open reservations of a run whose calls died
	// with their process (their reserved amounts stop counting) and
	// returns how many it closed.
	ReleaseRun(ctx context.Context, runID string) (int, error)
	// Spend returns the use of day by each tenant that has reservations on
	// it (tenant "" keeps them all), by tenant.
	Spend(ctx context.Context, day, tenant string) ([]*Spend, error)
	// Sessions.
	//
	// Sessions lists the sessions of the store's runs (the runs created
	// with a CreateRunParams.Session), one per session id and flow, the
	// one with the newest run first.
	Sessions(ctx context.Context, p *ListSessionsParams) ([]*Session, error)

	// Invalidated resources (invalid.go): what remediations froze, across
	// runs, by tenant.
	//
	// Invalidate records rows, idempotently: a row already recorded under
	// its (tenant, resource, run, call key) is left as it was, cleared or
	// not.
	Invalidate(ctx context.Context, rows []*Invalidation) error
	// Invalidated returns the rows of p.Tenant not cleared (of
	// p.Resources only, when given), oldest first.
	Invalidated(ctx context.Context, p *InvalidatedParams) ([]*Invalidation, error)
	// ClearInvalidated marks the tenant's rows of p.Resource (of p.RunID
	// only, when set) cleared and returns how many it cleared; none is not
	// an error.
	ClearInvalidated(ctx context.Context, p *ClearInvalidatedParams) (int, error)

	Close() error
}

// Run is the run projection.
type Run struct {
	ID   string `json:"id"`
	Flow string `json:"flow"`
	// FlowPath is where the flow was loaded from; FlowHash is the sha256 of
	// FlowText, the exact flow file the run started with (a resume parses
	// this text, never the file on disk).
	FlowPath string          `json:"flow_path,omitempty"`
	FlowHash string          `json:"flow_hash"`
	FlowText []byte          `json:"-"`
	Input    json.RawMessage `json:"input"`
	// Meta holds what a resume needs besides the flow (config path, script
	// path, model names), as the caller chose to record it.
	Meta           json.RawMessage `json:"meta,omitempty"`
	Status         trace.RunStatus `json:"status"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	Session        string          `json:"session,omitempty"`
	// Tenant is the tenant the run belongs to (CreateRunParams.Tenant):
	// a surface serving several tenants (rein serve) shows a run only to
	// its own. Empty for runs started outside one.
	Tenant string `json:"tenant,omitempty"`
	// Error is the run's failure (engine.RunError as JSON), when it failed.
	Error json.RawMessage `json:"error,omitempty"`
	Usage json.RawMessage `json:"usage,omitempty"`
	// Version counts committed transitions, lease changes and decisions.
	Version int64 `json:"version"`
	// LastSeq is the sequence number of the run's last event.
	LastSeq      int64     `json:"last_seq"`
	LeaseOwner   string    `json:"lease_owner,omitempty"`
	LeaseExpires time.Time `json:"lease_expires,omitzero"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	SettledAt    time.Time `json:"settled_at,omitzero"`
	// Retention, when set, is how long the run is kept after it settles
	// (the flow's retention:); Prune honours the longer of it and its own.
	Retention time.Duration `json:"retention,omitempty"`
}

// Finished reports whether the run reached a final status.
func (r *Run) Finished() bool {
	switch r.Status {
	case trace.RunSucceeded, trace.RunFailed, trace.RunCancelled:
		return true
	}
	return false
}

// CreateRunParams describes a new run. ID is chosen by the caller.
type CreateRunParams struct {
	ID             string
	Flow           string
	FlowPath       string
	FlowHash       string
	FlowText       []byte
	Input          json.RawMessage
	Meta           json.RawMessage
	IdempotencyKey string
	Session        string
	// Tenant owns the run (Run.Tenant); empty for none.
	Tenant    string
	Retention time.Duration
	// Status is the initial status; empty means pending.
	Status trace.RunStatus
	// Owner, when set, creates the run leased to Owner until
	// Now+LeaseTTL; Now is then required (ErrNoTime).
	Owner    string
	LeaseTTL time.Duration
	// Now is the caller's time: the run's CreatedAt and UpdatedAt, and the
	// start of its lease. Zero means the store's clock, unless Owner is
	// set. In a creating Commit (Transition.Create) it is not read: the
	// run is created at the transition's Now.
	Now time.Time
}

// ListRunsParams filters ListRuns; zero fields do not filter.
type ListRunsParams struct {
	Status trace.RunStatus
	Flow   string
	// IDPrefix keeps the runs whose ID starts with it (byte-wise), for
	// resolving a shortened run ID.
	IDPrefix string
	// Session keeps the runs started with that session id
	// (CreateRunParams.Session), for a chat's earlier exchanges.
	Session string
	// Tenant keeps the runs of that tenant (CreateRunParams.Tenant).
	Tenant string
	// Before, a run ID, keeps the runs created before that run: the
	// cursor of the next page after a page ending with it. A run that does
	// not exist keeps none.
	Before string
	// Limit caps the result; ≤ 0 means 100.
	Limit int
}

// Transition is one atomic step of a run's history.
type Transition struct {
	RunID string
	// Version is the run version this transition builds on; Commit checks
	// it and, on success, sets it to the new version.
	Version int64
	// Events, numbered with their per-run sequence by the caller:
	// increasing, and after the run's last (LastSeq). A store never
	// numbers them; an event with Seq ≤ 0 fails the Commit.
	Events []*trace.Event
	// Run, when set, updates the run projection.
	Run *RunUpdate
	// Steps sets step projections (by StepID): each replaces what the
	// run held for its step.
	Steps []*Step
	// Approvals inserts pending approvals.
	Approvals []*Approval
	// Create, when set, makes this the run's first transition: Commit
	// creates the run as CreateRun would (Version must be 0, RunID equal
	// to Create.ID) and applies the transition to it, so a run costs no
	// commit of its own. A run with that ID is ErrConflict. An idempotency
	// key is refused: a start that may find an existing run calls CreateRun.
	// SQLite creates the run in the transition's own transaction; a backend
	// may create it in a transaction just before (then a failed Commit can
	// leave the run created at version 0, as a crash after CreateRun would).
	Create *CreateRunParams
	// Now is the caller's time of the transition: the run's UpdatedAt, its
	// SettledAt when a final Run update leaves that zero, the CreatedAt of
	// Approvals that leave it zero, the DecidedAt of the approvals a final
	// transition closes, and, with Create, the run's creation and the start
	// of its lease. Zero means the store's clock, unless Create has an
	// Owner (ErrNoTime).
	Now time.Time
}

// RunUpdate changes the run projection. Empty fields are left alone.
type RunUpdate struct {
	Status    trace.RunStatus
	Error     json.RawMessage
	Usage     json.RawMessage
	SettledAt time.Time
	// Reason, for a final Status, is the comment recorded on the pending
	// approvals the transition closes; empty means "the run is <status>".
	Reason string
}

// CloseReason is the comment a final transition records on the pending
// approvals it closes.
func (u *RunUpdate) CloseReason() string {
	if u.Reason != "" {
		return u.Reason
	}
	return "the run is " + string(u.Status)
}

// Step is journal.Step (an alias): a step's record, set by a transition
// and read back as the step projection. Package journal owns it and its
// encoding.
type Step = journal.Step

// ApprovalStatus is where an approval stands.
type ApprovalStatus string

// Approval statuses.
const (
	ApprovalPending  ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalRejected ApprovalStatus = "rejected"
	// ApprovalSettled: a person recorded the step's output by hand
	// (`rein runs settle`).
	ApprovalSettled ApprovalStatus = "settled"
)

// ApprovalKind says why a person is asked.
type ApprovalKind string

// Approval kinds.
const (
	// KindApproval: a step of type approval, or a tool step with approval:
	// required, waits before its side effect.
	KindApproval ApprovalKind = "approval"
	// KindUnknown: a non-idempotent step was in flight when the process
	// died; nobody knows whether its effect happened.
	KindUnknown ApprovalKind = "unknown"
	// KindEscalation: a step failed and its on_error is escalate; the
	// message says why. Approve runs it again, reject fails the run with
	// its error, settle provides its output.
	KindEscalation ApprovalKind = "escalation"
	// KindPremise: a step's output, or a tool call's, contradicts a
	// declared premise (premise: {id, claim, check}); the message names
	// it. While one waits the whole run is paused: nothing that has not
	// started is dispatched. Approve runs the step again, reject fails the
	// run with its error, settle provides its output; then the run goes on.
	KindPremise ApprovalKind = "premise"
	// KindSubmission: a submit or source step waits for an agent (the
	// workflow tool of package bridge) to provide its output; settle
	// records it.
	KindSubmission ApprovalKind = "submission"
)

// Approval is a question to a person about one step of a run.
type Approval struct {
	ID     string         `json:"id"`
	RunID  string         `json:"run_id"`
	StepID string         `json:"step_id"`
	Kind   ApprovalKind   `json:"kind"`
	Status ApprovalStatus `json:"status"`
	// Tool and Args record what would run, and with which arguments.
	Tool    string          `json:"tool,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Message string          `json:"message,omitempty"`
	// Output is the output recorded by a settle decision.
	Output    json.RawMessage `json:"output,omitempty"`
	Comment   string          `json:"comment,omitempty"`
	DecidedBy string          `json:"decided_by,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	DecidedAt time.Time       `json:"decided_at,omitzero"`
}

// ListApprovalsParams filters Approvals. RunID empty lists every run's.
type ListApprovalsParams struct {
	RunID  string
	Status ApprovalStatus
}

// DecideApprovalParams settles the pending approval of a step.
type DecideApprovalParams struct {
	RunID  string
	StepID string
	// Status is approved, rejected or settled.
	Status    ApprovalStatus
	Output    json.RawMessage // for settled
	Comment   string
	DecidedBy string
	// Now is the caller's time: the approval's DecidedAt and the run's
	// UpdatedAt. Zero means the store's clock.
	Now time.Time
}

// LeaseParams names a lease.
type LeaseParams struct {
	RunID string
	Owner string
	TTL   time.Duration
	// Now is the caller's time, required (ErrNoTime): the lease runs from
	// it, and another owner's lease is judged expired by it.
	Now time.Time
	// TakeFrom, for AcquireLease, names an owner whose lease is taken even
	// though it has not expired: the caller knows that owner is gone (a
	// process of this host that no longer runs). A lease held by anyone
	// else is still ErrConflict until it expires.
	TakeFrom string
}

// ClaimParams asks for ready runs.
type ClaimParams struct {
	Owner string
	TTL   time.Duration
	Limit int
	// Now is the caller's time, required (ErrNoTime): leases unexpired at
	// Now are skipped, and the claimed ones run from it.
	Now time.Time
}

// PruneParams selects runs to delete.
type PruneParams struct {
	// Before: runs settled before this instant.
	Before time.Time
	// Now is the caller's time, required (ErrNoTime): a run whose own
	// Retention is longer is kept until its SettledAt+Retention is past
	// Now.
	Now time.Time
	// Status, when set, restricts pruning to one final status.
	Status trace.RunStatus
	// Session, when set, deletes the finished runs of that session id
	// (a conversation a person asked to forget), whatever Before and their
	// own Retention say; runs that have not finished are kept.
	Session string
	// DryRun selects the same runs and deletes nothing: the result lists
	// them in RunIDs (oldest first) and counts them in Runs; Blobs is 0.
	DryRun bool
	// Vacuum, after the deletion, gives the space the store no longer
	// uses back to the file system: SQLite rewrites the database (VACUUM,
	// in time proportional to its size; the file shrinks at the next
	// checkpoint, at the latest when the store closes). Backends that
	// reuse space on their own (PostgreSQL's autovacuum) ignore it.
	Vacuum bool
}

// ListSessionsParams filters Sessions; zero fields do not filter.
type ListSessionsParams struct {
	// Flow keeps the sessions of that flow (an agent's name).
	Flow string
	// Tenant keeps the sessions of that tenant's runs.
	Tenant string
	// Limit caps the result; ≤ 0 means 100.
	Limit int
}

// Session is one conversation: the runs of one flow recorded with one
// session id.
type Session struct {
	ID   string `json:"id"`
	Flow string `json:"flow"`
	// Runs counts its runs (one per message).
	Runs int `json:"runs"`
	// CreatedAt is when its first run was created, LastAt its newest.
	CreatedAt time.Time `json:"created_at"`
	LastAt    time.Time `json:"last_at"`
	// LastRun is the id of its newest run.
	LastRun string `json:"last_run"`
}

// PruneResult counts what Prune deleted.
type PruneResult struct {
	Runs  int `json:"runs"`
	Blobs int `json:"blobs"`
	// RunIDs are the runs a dry run selected.
	RunIDs []string `json:"run_ids,omitempty"`
	// Reclaimed is how many bytes Vacuum gave back (0 without Vacuum).
	Reclaimed int64 `json:"reclaimed_bytes,omitempty"`
}
