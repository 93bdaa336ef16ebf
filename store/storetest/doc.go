// Package storetest is the conformance suite of the store port: every
// backend (store/sqlite, store/postgres, …) passes Run, and a new behaviour
// of the port goes into this suite before it goes into a backend.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Harness{
//			New: func(t *testing.T) store.Store { … },
//			CorruptEvent: func(t *testing.T, s store.Store, runID string, seq int64, version int, data []byte) { … },
//			CorruptStep:  func(t *testing.T, s store.Store, runID, stepID string, version int, rec []byte) { … },
//		})
//	}
//
// Each subtest gets its own store from Harness.New and runs in parallel with
// the others. The lease cases run on virtual time: every call passes its
// Now, years before or after the real clock, so a backend must decide by
// the caller's time (store.Store), never its own; it writes outputs larger than
// store.DefaultBlobThreshold, so the backend under test must use that
// threshold or a lower one.
//
// Where the port's doc comments leave a choice open, the suite pins it down
// (so that every backend behaves the same):
//
//   - A new run has LastSeq 0 and CreatedAt/UpdatedAt set; CreateRun with an
//     existing ID and no matching idempotency key is ErrConflict.
//   - Commit, GetRun, Events, Steps, AcquireLease, RenewLease and
//     DecideApproval on a run that does not exist are ErrNotFound; Events and
//     Steps of an existing run with none are empty, not an error.
//   - Commit fills in Step.RunID and Approval.RunID from the transition; a new
//     approval's Status is pending and its CreatedAt, when zero, is the
//     commit time. Run.LastSeq becomes the largest committed Seq.
//   - A Commit that fails — stale version, duplicate sequence, an event
//     without a sequence number or out of order, cancelled context —
//     applies nothing, and leaves t.Version as it was. The caller numbers
//     events; a store never does.
//   - Steps are returned in the order each step was first written; Approvals
//     in the order they were created.
//   - Run.Input, Run.Meta, Run.FlowText and Step.Output round-trip
//     byte-exact (no JSON normalisation).
//   - Every field of an event and of a step, each set (journal/journaltest
//     fills them by reflection), reads back as it was committed.
//   - A record that does not decode is an error naming the run and "seq N"
//     (a step record: "step ID"); one from a newer journal version says
//     "newer" and "upgrade rein".
//   - Several approvals may exist for one step over time (a step asked again
//     after a second crash); DecideApproval settles the pending one.
//   - AcquireLease by the current owner extends the lease; RenewLease does
//     not change the run's Version (a heartbeat must not conflict with the
//     owner's own commits); ReleaseLease clears LeaseOwner.
//   - ClaimRuns bumps the Version of each run it leases.
//   - Prune keeps a run until both p.Before and its own Retention have
//     passed since it settled, and counts only the blobs it deleted.
package storetest
