package rein_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

func TestResolveRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := openStore(ctx, filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	if _, err := runs.Resolve(ctx, st, runs.Last); !errors.Is(err, store.ErrNotFound) || fault.ClassOf(err) != fault.NotFound {
		t.Fatalf("last of an empty store: %v (class %s)", err, fault.ClassOf(err))
	}
	for _, id := range []string{"0a1b-one", "0a1c-two", "0a1c-three", "last-but-not-least"} {
		if _, _, err := st.CreateRun(ctx, &store.CreateRunParams{ID: id, Flow: "f", Status: trace.RunWaiting}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ ref, want string }{
		{"0a1c-two", "0a1c-two"},       // a full id
		{"0a1b", "0a1b-one"},           // a unique prefix
		{"0a1c-th", "0a1c-three"},      // a longer one
		{"last", "last-but-not-least"}, // the newest run
		{"last-", "last-but-not-least"},
	} {
		run, err := runs.Resolve(ctx, st, tc.ref)
		if err != nil || run.ID != tc.want || run.Flow != "f" {
			t.Errorf("ResolveRun(%q) = %v, %v; want run %s", tc.ref, run, err, tc.want)
		}
	}

	_, err = runs.Resolve(ctx, st, "0a1c")
	var amb *runs.AmbiguousError
	if !errors.As(err, &amb) || fault.ClassOf(err) != fault.Conflict {
		t.Fatalf("ambiguous prefix: %v (class %s)", err, fault.ClassOf(err))
	}
	if len(amb.Candidates) != 2 || amb.More || !strings.Contains(err.Error(), "0a1c-two") || !strings.Contains(err.Error(), "0a1c-three") {
		t.Fatalf("ambiguous prefix lists %d candidates: %v", len(amb.Candidates), err)
	}
	for _, ref := range []string{"0a1d", "", "%", "0A1B"} {
		if _, err := runs.Resolve(ctx, st, ref); !errors.Is(err, store.ErrNotFound) || fault.ClassOf(err) != fault.NotFound {
			t.Errorf("ResolveRun(%q): %v, want not found", ref, err)
		}
	}

	// a run whose id is "last" is found by its id
	if _, _, err := st.CreateRun(ctx, &store.CreateRunParams{ID: "last", Flow: "g", Status: trace.RunPending}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CreateRun(ctx, &store.CreateRunParams{ID: "zz-newest", Flow: "g", Status: trace.RunPending}); err != nil {
		t.Fatal(err)
	}
	if run, err := runs.Resolve(ctx, st, "last"); err != nil || run.ID != "last" {
		t.Fatalf("a run named last: %v, %v", run, err)
	}
}

func TestResolveRunListsAtMostTenCandidates(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := openStore(ctx, filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range 12 {
		if _, _, err := st.CreateRun(ctx, &store.CreateRunParams{ID: "r" + string(rune('a'+i)), Flow: "f"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = runs.Resolve(ctx, st, "r")
	var amb *runs.AmbiguousError
	if !errors.As(err, &amb) || len(amb.Candidates) != 10 || !amb.More || amb.Candidates[0].ID != "rl" {
		t.Fatalf("%v", err)
	}
}
