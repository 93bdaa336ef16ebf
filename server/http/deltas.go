package http

import (
	"context"
	"sync"

	"github.com/reinhq/rein/trace"
)

// deltaBuffer is how many deltas a subscriber may have unread before the
// next ones are dropped for it.
const deltaBuffer = 256

// Deltas is the per-run, in-memory hub of the model text the runs of this
// process stream while their models write it (trace.Delta). It is a
// trace.DeltaSink: give it to the Client beside the metrics
// (rein.Config.Sink: trace.Multi(metrics, deltas)) and to the Server
// (Options.Deltas), whose event streams then carry the deltas of their
// run from the moment they connect (event: delta).
//
// Deltas are a view, never a record: none is journaled or kept, a client
// that connects mid-reply gets the text written from then on (the journal
// has the whole reply once the call is done), and a subscriber that does
// not read loses deltas rather than slowing the model call down.
type Deltas struct {
	mu   sync.Mutex
	subs map[string]map[*deltaSub]struct{}
}

type deltaSub struct {
	ch chan trace.Delta
}

var _ trace.DeltaSink = (*Deltas)(nil)

// NewDeltas returns an empty hub.
func NewDeltas() *Deltas { return &Deltas{subs: map[string]map[*deltaSub]struct{}{}} }

// Emit takes no events: the journal carries them.
func (h *Deltas) Emit(context.Context, *trace.Event) {}

// EmitDelta hands d to the subscribers of its run, never blocking: one
// whose buffer is full misses it.
func (h *Deltas) EmitDelta(_ context.Context, d trace.Delta) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[d.RunID] {
		select {
		case s.ch <- d:
		default:
		}
	}
}

// Subscribe returns the deltas of run streamed from now on, and the
// function that ends the subscription (call it once).
func (h *Deltas) Subscribe(run string) (<-chan trace.Delta, func()) {
	s := &deltaSub{ch: make(chan trace.Delta, deltaBuffer)}
	h.mu.Lock()
	if h.subs[run] == nil {
		h.subs[run] = map[*deltaSub]struct{}{}
	}
	h.subs[run][s] = struct{}{}
	h.mu.Unlock()
	return s.ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs[run], s)
		if len(h.subs[run]) == 0 {
			delete(h.subs, run)
		}
	}
}
