// Package store is the persistence seam of the engine. The engine reports
// every transition of a run — the trace events it emits, in order — to a
// Store before it acts on the next one, so a durable backend can journal
// them transactionally. This issue ships only the seam and the in-process
// default (nothing is persisted); the durable backends (SQLite, PostgreSQL)
// extend the interface rather than change the scheduler.
package store

import (
	"context"

	"github.com/reinhq/rein/trace"
)

// Transition is one step of a run's history: the events that make it up, in
// order, already numbered with their per-run sequence.
type Transition struct {
	RunID  string
	Events []*trace.Event
}

// Store receives a run's transitions. Commit must return only once the
// transition is as durable as the backend promises; an error stops the run
// (the engine never acts on a transition that was not committed). Commit is
// called from the run's scheduler goroutine only.
type Store interface {
	Commit(ctx context.Context, t *Transition) error
}

// Ephemeral is the Store that keeps nothing: runs live in memory only.
var Ephemeral Store = ephemeral{}

type ephemeral struct{}

func (ephemeral) Commit(context.Context, *Transition) error { return nil }
