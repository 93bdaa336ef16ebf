package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// deadOwner is a lease owner of this host and PID namespace whose process
// has exited (a child that ran and was reaped).
func deadOwner(t *testing.T) string {
	t.Helper()
	me := strings.Split(engine.NewOwner(), "/")
	if len(me) != 4 {
		t.Skipf("owner %q carries no PID namespace on %s", engine.NewOwner(), runtime.GOOS)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s/%d/deadbeef/%s", me[0], cmd.Process.Pid, me[3])
}

// leaseTo makes run r of crashFlow look as a crashed process left it,
// leased to owner for an hour.
func leaseTo(t *testing.T, st store.Store, owner string) {
	t.Helper()
	if _, err := st.AcquireLease(context.Background(), &store.LeaseParams{RunID: "r", Owner: owner, TTL: time.Hour, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// After a crash on this machine, resume and cancel need not wait for the
// dead process's lease to expire; a live process's lease still blocks them.
func TestResumeTakesOverTheLeaseOfADeadProcess(t *testing.T) {
	t.Parallel()
	dead := deadOwner(t)
	for _, tc := range []struct {
		name, owner string
		taken       bool
	}{
		{"dead process of this host", dead, true},
		{"live process of this host", strings.Replace(dead, "/"+strings.Split(dead, "/")[1]+"/", fmt.Sprintf("/%d/", os.Getppid()), 1), false},
		{"another host", "elsewhere" + dead[strings.Index(dead, "/"):], false},
		{"owner without a PID namespace", strings.Join(strings.Split(dead, "/")[:3], "/"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := newKeyCounter("a", false), newKeyCounter("b", true)
			fx := newFixture(t, a, b)
			st := openSQLite(t)
			crashState(t, st, nil, fx, crashFlow, true)
			leaseTo(t, st, tc.owner)
			e := durableEngine(fx, st, "p2")
			res, err := e.Resume(context.Background(), fx.parse(crashFlow), "r")
			if !tc.taken {
				if !errors.Is(err, store.ErrConflict) {
					t.Fatalf("resume of a run leased to %s: %v, %+v; want a conflict", tc.owner, err, res)
				}
				if err := e.Cancel(context.Background(), "r", "test"); !errors.Is(err, store.ErrConflict) {
					t.Errorf("cancel of a run leased to %s: %v; want a conflict", tc.owner, err)
				}
				return
			}
			if err != nil || res.Status != trace.RunSucceeded {
				t.Fatalf("resume of a run leased to a dead process: %v, %+v", err, res)
			}
		})
	}
}

func TestCancelTakesOverTheLeaseOfADeadProcess(t *testing.T) {
	t.Parallel()
	a, b := newKeyCounter("a", false), newKeyCounter("b", true)
	fx := newFixture(t, a, b)
	st := openSQLite(t)
	crashState(t, st, nil, fx, crashFlow, true)
	leaseTo(t, st, deadOwner(t))
	if err := durableEngine(fx, st, "p2").Cancel(context.Background(), "r", "test"); err != nil {
		t.Fatalf("cancel of a run leased to a dead process: %v", err)
	}
	if run, err := st.GetRun(context.Background(), "r"); err != nil || run.Status != trace.RunCancelled {
		t.Errorf("run after cancel: %+v, %v", run, err)
	}
}
