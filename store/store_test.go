package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/store"
)

// TestSentinelsCarryTheirClass: errors.Is and fault.ClassOf agree on the
// store's sentinels however a backend wraps them, and an outer class given
// on purpose still wins.
func TestSentinelsCarryTheirClass(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		err    error
		target error
		class  fault.Class
	}{
		{"conflict", store.ErrConflict, store.ErrConflict, fault.Conflict},
		{"not found", store.ErrNotFound, store.ErrNotFound, fault.NotFound},
		{"wrapped conflict", fmt.Errorf("sqlite: commit run r at version 3: %w", store.ErrConflict), store.ErrConflict, fault.Conflict},
		{"wrapped twice", fmt.Errorf("resume: %w", fmt.Errorf("get run r: %w", store.ErrNotFound)), store.ErrNotFound, fault.NotFound},
		{"joined", errors.Join(errors.New("rollback failed"), fmt.Errorf("lease: %w", store.ErrConflict)), store.ErrConflict, fault.Conflict},
		{"reclassed on purpose", fault.New(fault.Policy, fmt.Errorf("approval: %w", store.ErrConflict)), store.ErrConflict, fault.Policy},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if !errors.Is(c.err, c.target) {
				t.Errorf("errors.Is(%v, %v) = false", c.err, c.target)
			}
			if got := fault.ClassOf(c.err); got != c.class {
				t.Errorf("fault.ClassOf(%v) = %q, want %q", c.err, got, c.class)
			}
		})
	}
	if errors.Is(store.ErrConflict, store.ErrNotFound) || errors.Is(store.ErrNotFound, store.ErrConflict) {
		t.Error("the sentinels match each other")
	}
	if store.ErrConflict.Error() != "conflict" || store.ErrNotFound.Error() != "not found" {
		t.Errorf("messages changed: %q, %q", store.ErrConflict, store.ErrNotFound)
	}
}
