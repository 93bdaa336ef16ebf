package dropped

import (
	"fmt"
	"testing"
)

func TestSet(t *testing.T) {
	t.Parallel()
	var s Set
	if s.Take("a") {
		t.Fatal("an empty set holds a")
	}
	s.Note("a")
	s.Note("b")
	s.Forget("b")
	if !s.Take("a") || s.Take("a") {
		t.Error("Take(a) after Note(a): want true once, then false")
	}
	if s.Take("b") {
		t.Error("Take(b) after Forget(b) = true")
	}
	// bounded: past max it starts over, and forgets what it held
	for i := range max + 1 {
		s.Note(fmt.Sprint("r", i))
	}
	if s.Take("r0") || !s.Take(fmt.Sprint("r", max)) {
		t.Error("past max: want the old entries forgotten and the newest kept")
	}
}
