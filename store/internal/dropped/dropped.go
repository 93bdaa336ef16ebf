// Package dropped remembers the runs whose lease a store's own final
// Commit dropped, so that the owner's ReleaseLease that follows — the
// engine releases every lease it took — costs no round trip to the
// database. Both backends use it.
//
// Skipping that release is exact: the final commit cleared the lease, and
// a release matches only its own owner. Whoever leases the run afterwards
// through the same store calls Forget first; a lease taken through another
// store or process has another owner, whose lease the skipped release
// would not have touched either.
package dropped

import "sync"

// max bounds a Set; past it the set starts over, and a release of a
// forgotten run takes the ordinary, correct, slower path.
const max = 4096

// Set is a set of run IDs, safe for concurrent use. The zero value is
// empty and ready.
type Set struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// Note records that a final commit dropped the run's lease.
func (s *Set) Note(runID string) {
	s.mu.Lock()
	if s.m == nil || len(s.m) >= max {
		s.m = make(map[string]struct{})
	}
	s.m[runID] = struct{}{}
	s.mu.Unlock()
}

// Forget is called when the run is leased again through the store.
func (s *Set) Forget(runID string) {
	s.mu.Lock()
	delete(s.m, runID)
	s.mu.Unlock()
}

// Take reports whether a final commit dropped the run's lease since it
// was last leased, and forgets it.
func (s *Set) Take(runID string) bool {
	s.mu.Lock()
	_, ok := s.m[runID]
	delete(s.m, runID)
	s.mu.Unlock()
	return ok
}
