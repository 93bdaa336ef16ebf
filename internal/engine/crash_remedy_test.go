package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// The remediation crash test: a child process (this test binary, re-run
// with REIN_REMEDY_CRASH_AT set) takes back three calls — two
// compensations whose tools are not idempotent (release, refund) and an
// undo whose tool is (untag) — either by remediating its failed run
// (mode remediate: Engine.Remediate, what rein runs remediate calls) or as
// the saga of a flow with on_failure: compensate (mode saga), and kills
// itself with SIGKILL at one commit point of that; the parent carries the
// remediation on (Remediate again, or Resume) from the same SQLite file.
// Every tool appends its name and idempotency key to ledger.log, which
// survives the kill.
const remedyCrashFlow = `name: remedy_crash
%s
steps:
  - {id: book, tool: book, args: {n: a}}
  - {id: reserve, tool: reserve, args: {n: b}}
  - {id: tag, tool: tag, args: {n: c}}
  - {id: fail, tool: broken, args: {}}
`

const remedyCrashRun = "rc"

// The keys of the undo and compensations, in the order they are made
// (latest completed first).
var remedyCrashKeys = []string{"rc/tag/1/undo", "rc/reserve/1/compensate", "rc/book/1/compensate"}

// remedyCrashTools: book, reserve and tag (writes) with their
// compensations refund (external) and release (write), and tag's undo
// untag (write, idempotent); broken fails. Each appends "<tool> <key>" to
// dir/ledger.log and kills the process when at is "during:" + its key.
func remedyCrashTools(dir, at string) *tool.Registry {
	reg := &tool.Registry{}
	mk := func(spec tool.Spec) tool.Tool {
		return tool.Func(spec, func(ctx context.Context, _ any) (any, error) {
			key := tool.CallInfoFrom(ctx).IdempotencyKey
			f, err := os.OpenFile(filepath.Join(dir, "ledger.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, err
			}
			_, err = f.WriteString(spec.Name + " " + key + "\n")
			f.Close()
			if err != nil {
				return nil, err
			}
			if at == "during:"+key {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			return map[string]any{"id": spec.Name + "-1"}, nil
		})
	}
	back := func(name string) *tool.Compensation {
		return &tool.Compensation{Tool: name, Args: map[string]any{"id": "{output.id}"}}
	}
	for _, t := range []tool.Tool{
		mk(tool.Spec{Name: "book", Effect: tool.EffectWrite, Reversibility: tool.Compensatable, Compensate: back("refund")}),
		mk(tool.Spec{Name: "reserve", Effect: tool.EffectWrite, Reversibility: tool.Compensatable, Compensate: back("release")}),
		mk(tool.Spec{Name: "tag", Effect: tool.EffectWrite, Reversibility: tool.Reversible, Undo: back("untag")}),
		mk(tool.Spec{Name: "refund", Effect: tool.EffectExternal}),
		mk(tool.Spec{Name: "release", Effect: tool.EffectWrite}),
		mk(tool.Spec{Name: "untag", Effect: tool.EffectWrite, Idempotent: true}),
		tool.Func(tool.Spec{Name: "broken", Effect: tool.EffectNone}, func(context.Context, any) (any, error) {
			return nil, fault.New(fault.Business, errors.New("down"))
		}),
	} {
		if err := reg.Register(t); err != nil {
			panic(err)
		}
	}
	return reg
}

func remedyCrashFlowFor(t testing.TB, reg *tool.Registry, saga bool) *flow.Flow {
	t.Helper()
	head := ""
	if saga {
		head = "on_failure: compensate"
	}
	f, err := flow.Parse(fmt.Appendf(nil, remedyCrashFlow, head), "remedy_crash.yaml", &flow.Options{Tools: specsOf(reg)})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// remedyKillingStore kills the process instead of committing the start
// (before:start:KEY) or the outcome (before:outcome:KEY) of the call
// keyed KEY, right after committing its outcome (after:outcome:KEY), or
// instead of committing the run's settlement (before:settle).
type remedyKillingStore struct {
	store.Store
	at string
}

func (k *remedyKillingStore) Commit(ctx context.Context, t *store.Transition) error {
	die := func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL); select {} }
	after := false
	for _, ev := range t.Events {
		if c := ev.Call; c != nil {
			switch {
			case k.at == "before:start:"+c.Key && c.Status == store.CallStarted,
				k.at == "before:outcome:"+c.Key && c.Status.Settled():
				die()
			case k.at == "after:outcome:"+c.Key && c.Status.Settled():
				after = true
			}
		}
		if k.at == "before:settle" && ev.Kind == trace.RunSettled {
			die()
		}
	}
	err := k.Store.Commit(ctx, t)
	if after {
		die()
	}
	return err
}

// remediesOf is the remediation of every call of the run with an effect,
// latest first (what rein runs remediate --premise book plans here).
func remediesOf(t testing.TB, st store.Store, runID string) []engine.Remedy {
	t.Helper()
	events, err := st.Events(context.Background(), runID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []engine.Remedy
	for _, ev := range events {
		eff, ok, err := journal.EffectOf(ev)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || eff.Remedy != "" {
			continue
		}
		if a := engine.Classify(eff); a != engine.ActKeep {
			out = append(out, engine.Remedy{Effect: *eff, Action: a})
		}
	}
	slices.Reverse(out)
	return out
}

// TestRemedyCrashChild is the child's body; it does nothing in a normal run.
func TestRemedyCrashChild(t *testing.T) {
	at := os.Getenv("REIN_REMEDY_CRASH_AT")
	if at == "" {
		t.Skip("the remediation crash test's child process (run by TestRemediationCrash)")
	}
	ctx := context.Background()
	dir := os.Getenv("REIN_CRASH_DIR")
	saga := os.Getenv("REIN_REMEDY_CRASH_MODE") == "saga"
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := remedyCrashTools(dir, at)
	f := remedyCrashFlowFor(t, reg, saga)
	killing := engine.New(engine.Config{Tools: reg, Store: &remedyKillingStore{Store: st, at: at}})
	if saga {
		_, err = killing.Run(ctx, f, nil, &engine.RunOptions{RunID: remedyCrashRun})
		t.Fatalf("the child was meant to die at %s in the saga, but its run returned (%v)", at, err)
	}
	res, err := engine.New(engine.Config{Tools: reg, Store: st}).Run(ctx, f, nil, &engine.RunOptions{RunID: remedyCrashRun})
	if err != nil || res.Status != trace.RunFailed {
		t.Fatalf("the run did not fail: %v %+v", err, res)
	}
	_, err = killing.Remediate(ctx, f, remedyCrashRun, "book", remediesOf(t, st, remedyCrashRun))
	t.Fatalf("the child was meant to die at %s in the remediation, but it returned (%v)", at, err)
}

// TestRemediationCrash: a remediation (rein runs remediate) or a saga
// (on_failure: compensate) killed at each of its commit points — before an
// undo or compensation is committed as dispatched, while its tool runs,
// before and after its outcome is committed, before the run settles — and
// carried on afterwards (remediate again, or resume) makes every
// compensation exactly once, or leaves it waiting for a person: one whose
// tool is not idempotent and was dispatched without a recorded outcome is
// unknown, an escalation; the idempotent undo is made again with the same
// key. Nothing is repeated without a person, nothing is lost; a person
// who settles the escalation ends the run without another call.
func TestRemediationCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	type tcase struct{ mode, at string }
	var cases []tcase
	for _, mode := range []string{"remediate", "saga"} {
		for _, key := range remedyCrashKeys {
			for _, p := range []string{"before:start:", "during:", "before:outcome:", "after:outcome:"} {
				cases = append(cases, tcase{mode, p + key})
			}
		}
	}
	cases = append(cases, tcase{"saga", "before:settle"})
	for _, tc := range cases {
		t.Run(tc.mode+"/"+tc.at, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir, st := killedChild(t, "TestRemedyCrashChild", "REIN_REMEDY_CRASH_AT="+tc.at, "REIN_REMEDY_CRASH_MODE="+tc.mode)
			reg := remedyCrashTools(dir, "")
			saga := tc.mode == "saga"
			f := remedyCrashFlowFor(t, reg, saga)
			e := engine.New(engine.Config{Tools: reg, Store: st, Clock: pastLease(t, st, remedyCrashRun)})
			carryOn := func() *engine.Result {
				t.Helper()
				var res *engine.Result
				var err error
				if saga {
					res, err = e.Resume(ctx, f, remedyCrashRun)
				} else {
					res, err = e.Remediate(ctx, f, remedyCrashRun, "book", remediesOf(t, st, remedyCrashRun))
				}
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			res := carryOn()

			// in doubt: the key whose call was dispatched and never settled
			inDoubt := ""
			if p, key, ok := strings.Cut(tc.at, ":"); ok && (p == "during" || strings.HasPrefix(tc.at, "before:outcome:")) {
				inDoubt = key
				if p != "during" {
					inDoubt = strings.TrimPrefix(tc.at, "before:outcome:")
				}
			}
			unknown := ""
			if inDoubt != "" && !strings.HasSuffix(inDoubt, "/undo") {
				unknown = inDoubt // refund and release are not idempotent
			}
			ledger := readLines(t, filepath.Join(dir, "ledger.log"))
			calls := map[string][]string{} // tool → keys
			for i := 0; i+1 < len(ledger); i += 2 {
				calls[ledger[i]] = append(calls[ledger[i]], ledger[i+1])
			}
			for _, name := range []string{"book", "reserve", "tag"} {
				if n := len(calls[name]); n != 1 {
					t.Errorf("tool %s ran %d times, want once: %v", name, n, calls[name])
				}
			}
			for name, key := range map[string]string{"untag": remedyCrashKeys[0], "release": remedyCrashKeys[1], "refund": remedyCrashKeys[2]} {
				want := 1
				if key == inDoubt && unknown == "" {
					want = 2 // the idempotent undo, made again with its key
				}
				if got := calls[name]; len(got) != want || slices.ContainsFunc(got, func(k string) bool { return k != key }) {
					t.Errorf("%s ran with keys %v, want %d with key %s", name, got, want, key)
				}
			}
			if unknown == "" {
				if len(res.Pending) != 0 || res.Status != trace.RunFailed {
					t.Fatalf("status %s, pending %+v: want the run failed, every compensation made", res.Status, res.Pending)
				}
			} else {
				esc := strings.TrimPrefix(unknown, remedyCrashRun+"/")
				if res.Status != trace.RunWaiting || len(res.Pending) != 1 || res.Pending[0].StepID != esc || res.Pending[0].Kind != store.KindEscalation ||
					!strings.Contains(res.Pending[0].Message, "dispatched and the process stopped") {
					t.Fatalf("status %s, pending %+v: want the run waiting on escalation %s, the compensation in doubt", res.Status, res.Pending, esc)
				}
				// a person decides: in a remediation they took it back by
				// hand (settle); in a saga they have it made once more.
				decision, again := store.ApprovalSettled, 0
				if saga {
					decision, again = store.ApprovalApproved, 1
				}
				if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: remedyCrashRun, StepID: esc, Status: decision, DecidedBy: "ops"}); err != nil {
					t.Fatal(err)
				}
				if res, err := e.Resume(ctx, f, remedyCrashRun); err != nil || res.Status != trace.RunFailed || len(res.Pending) != 0 {
					t.Fatalf("after the escalation was decided (%s): %v %+v", decision, err, res)
				}
				after := readLines(t, filepath.Join(dir, "ledger.log"))
				if made := after[len(ledger):]; len(made) != 2*again || again > 0 && made[1] != unknown {
					t.Fatalf("deciding the escalation (%s) made calls %v", decision, made)
				}
			}
			remediationsAgree(t, st, unknown, saga)
		})
	}
}

// remediationsAgree checks the run's remediation records: each call taken
// back has one, done — or, for unknown, an unknown escalation a person
// resolved (settled) or had made once more (approved: done).
func remediationsAgree(t *testing.T, st store.Store, unknown string, approved bool) {
	t.Helper()
	events, err := st.Events(context.Background(), remedyCrashRun, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]int{}
	var story = map[string][]string{}
	for _, ev := range events {
		if ev.Kind != trace.Remediated {
			continue
		}
		m, err := journal.DecodeRemediation(ev)
		if err != nil {
			t.Fatal(err)
		}
		story[m.Key] = append(story[m.Key], m.Status)
		if m.Status == journal.RemedyDone {
			done[m.Key]++
		}
	}
	for _, key := range remedyCrashKeys {
		orig := strings.TrimSuffix(strings.TrimSuffix(key, "/undo"), "/compensate")
		want := []string{journal.RemedyDone}
		if key == unknown {
			want = []string{journal.RemedyUnknown, journal.RemedyResolved}
			if approved {
				want[1] = journal.RemedyDone
			}
		}
		if !slices.Equal(story[orig], want) || done[orig] > 1 {
			t.Errorf("remediation records of %s: %v, want %v", orig, story[orig], want)
		}
	}
}
