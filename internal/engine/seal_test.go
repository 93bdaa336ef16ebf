package engine_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/redact/seal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// The sealed-payload test: fetch returns a secret, use receives it in its
// args. The child is killed while use runs (after fetch's output was
// committed); the resume here must hand use the real value, while the
// database never holds it in clear.
const sealFlow = `name: sealed
steps:
  - {id: fetch, tool: fetch, args: {}}
  - {id: use, tool: use, args: {token: "{fetch.token}", user: "{fetch.user}", pw: "{input.password}"}}
`

const sealSecret = "tok-live-7f3a9c2e41d8b6"

// sealUsed is what use records when it is handed the secret, from fetch's
// output and from the run's input.
const sealUsed = sealSecret + "|" + sealSecret

func sealKey(t testing.TB, id string, b byte) seal.Key {
	t.Helper()
	k, err := seal.ParseKey(id, []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32))), "test")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func sealCodec(t testing.TB, cur seal.Key, old ...seal.Key) *seal.Codec {
	t.Helper()
	c, err := seal.New(cur, old...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sealTools: fetch returns the secret; use appends its token to
// dir/use.log and, when die is set, kills the process.
func sealTools(dir string, die bool) *tool.Registry {
	reg := &tool.Registry{}
	fetch := tool.Func(tool.Spec{Name: "fetch", Effect: tool.EffectRead, Idempotent: true}, func(context.Context, any) (any, error) {
		return map[string]any{"token": sealSecret, "user": "ann"}, nil
	})
	use := tool.Func(tool.Spec{Name: "use", Effect: tool.EffectWrite, Idempotent: true}, func(_ context.Context, args any) (any, error) {
		m, _ := args.(map[string]any)
		tok, _ := m["token"].(string)
		pw, _ := m["pw"].(string)
		tok += "|" + pw
		f, err := os.OpenFile(filepath.Join(dir, "use.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		_, err = f.WriteString(tok + "\n")
		f.Close()
		if err != nil {
			return nil, err
		}
		if die {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return map[string]any{"ok": true}, nil
	})
	for _, tl := range []tool.Tool{fetch, use} {
		if err := reg.Register(tl); err != nil {
			panic(err)
		}
	}
	return reg
}

func sealFlowFor(t testing.TB, reg *tool.Registry) *flow.Flow {
	t.Helper()
	f, err := flow.Parse([]byte(sealFlow), "sealed.yaml", &flow.Options{Tools: specsOf(reg)})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestSealChild is the child's body; it does nothing in a normal run.
func TestSealChild(t *testing.T) {
	if os.Getenv("REIN_SEAL_CHILD") == "" {
		t.Skip("the sealed-payload test's child process (run by TestSealedPayloadsResumeAsTheLiveRunSawThem)")
	}
	dir := os.Getenv("REIN_CRASH_DIR")
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := sealTools(dir, true)
	e := engine.New(engine.Config{Tools: reg, Store: st, Redactor: redact.New(sealSecret), Codec: sealCodec(t, sealKey(t, "k1", 1))})
	_, err = e.Run(context.Background(), sealFlowFor(t, reg), map[string]any{"password": sealSecret}, &engine.RunOptions{RunID: "sealed-run"})
	t.Fatalf("the child was meant to die in step use, but its run returned (%v)", err)
}

// dbHolds reports whether the SQLite files of the store in dir hold s.
func dbHolds(t *testing.T, dir, s string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "rein.db*"))
	if len(files) == 0 {
		t.Fatal("no database files")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

func TestSealedPayloadsResumeAsTheLiveRunSawThem(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	t.Parallel()
	dir, st := killedChild(t, "TestSealChild", "REIN_SEAL_CHILD=1")
	ctx := context.Background()
	if got := readLines(t, filepath.Join(dir, "use.log")); len(got) != 1 || got[0] != sealUsed {
		t.Fatalf("the live run handed use %v, want the secret", got)
	}
	if dbHolds(t, dir, sealSecret) {
		t.Fatal("the database holds the secret in clear")
	}
	reg := sealTools(dir, false)
	f := sealFlowFor(t, reg)
	red := redact.New(sealSecret)

	// without the key the run was sealed with: refused, the store as it was.
	before, err := st.GetRun(ctx, "sealed-run")
	if err != nil {
		t.Fatal(err)
	}
	evBefore, _ := st.Events(ctx, "sealed-run", 0, 0)
	for name, codec := range map[string]*seal.Codec{"no key": nil, "another key": sealCodec(t, sealKey(t, "k2", 2))} {
		e := engine.New(engine.Config{Tools: reg, Store: st, Redactor: red, Codec: codec, Clock: pastLease(t, st, "sealed-run")})
		_, err := e.Resume(ctx, f, "sealed-run")
		h := fault.HintOf(err)
		if err == nil || fault.ClassOf(err) != fault.Business || h.Code != fault.HintNeedsKey || h.KeyID != "k1" || h.RunID != "sealed-run" {
			t.Fatalf("%s: Resume = %v (hint %+v), want a business error with HintNeedsKey for k1", name, err, h)
		}
		for _, want := range []string{"sealed-run", "key k1", "old_keys", "the run is as it was"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the refusal does not say %q: %v", name, want, err)
			}
		}
		after, _ := st.GetRun(ctx, "sealed-run")
		evAfter, _ := st.Events(ctx, "sealed-run", 0, 0)
		if !reflect.DeepEqual(before, after) || len(evAfter) != len(evBefore) {
			t.Fatalf("%s: the refused resume changed the store:\n%+v\n%+v", name, before, after)
		}
	}
	if got := readLines(t, filepath.Join(dir, "use.log")); len(got) != 1 {
		t.Fatalf("a refused resume ran use: %v", got)
	}

	// the key rotated: k2 seals, k1 is listed as an old key and opens.
	e := engine.New(engine.Config{Tools: reg, Store: st, Redactor: red, Codec: sealCodec(t, sealKey(t, "k2", 2), sealKey(t, "k1", 1)),
		Clock: pastLease(t, st, "sealed-run")})
	res, err := e.Resume(ctx, f, "sealed-run")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunSucceeded {
		t.Fatalf("after resume: %s %+v", res.Status, res.Error)
	}
	if got := readLines(t, filepath.Join(dir, "use.log")); len(got) != 2 || got[1] != sealUsed {
		t.Fatalf("the resumed run handed use %v, want the secret again (what the live run saw)", got)
	}
	// views read the records: redacted, never the secret.
	status, err := e.Status(ctx, "sealed-run")
	if err != nil {
		t.Fatal(err)
	}
	if tok := status.Outputs["fetch"].(map[string]any)["token"]; tok != redact.Mask {
		t.Fatalf("Status shows fetch's token as %v, want %s", tok, redact.Mask)
	}
	if dbHolds(t, dir, sealSecret) {
		t.Fatal("after the resume, the database holds the secret in clear")
	}
	storeHoldsNot(t, st, "sealed-run", sealSecret)
}

// storeHoldsNot fails t when a record of run, read through the store
// (decoded, decompressed), holds secret.
func storeHoldsNot(t *testing.T, st store.Store, run, secret string) {
	t.Helper()
	ctx := context.Background()
	rows, err := st.Steps(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if bytes.Contains(row.Output, []byte(secret)) || bytes.Contains(row.Input, []byte(secret)) {
			t.Fatalf("step %s's row holds the secret", row.StepID)
		}
	}
	events, err := st.Events(ctx, run, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	sealed := 0
	for _, ev := range events {
		if b, _ := json.Marshal(ev); bytes.Contains(b, []byte(secret)) {
			t.Fatalf("event %d (%s) holds the secret", ev.Seq, ev.Kind)
		}
		if ev.Kind == trace.PayloadsSealed {
			sealed++
		}
	}
	if sealed == 0 {
		t.Fatal("the journal holds no sealed event")
	}
	r, err := st.GetRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(r.Input, []byte(secret)) {
		t.Fatal("the run's input holds the secret")
	}
}

// TestSealedPayloadThatDoesNotOpenIsDamage: a sealed payload altered at
// rest refuses the resume as damage, naming where.
func TestSealedPayloadThatDoesNotOpenIsDamage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := sealTools(dir, false)
	codec := sealCodec(t, sealKey(t, "k1", 1))
	tampering := &tamperStore{Store: st}
	e := engine.New(engine.Config{Tools: reg, Store: tampering, Redactor: redact.New(sealSecret), Codec: codec})
	// the run parks on an approval so that it can be resumed.
	f2, err := flow.Parse([]byte(sealFlow+"  - {id: ok, type: approval, requires: [use]}\n"), "sealed.yaml", &flow.Options{Tools: specsOf(reg)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(ctx, f2, map[string]any{"password": "p"}, &engine.RunOptions{RunID: "tampered"})
	if err != nil || res.Status != trace.RunWaiting {
		t.Fatalf("run: %v %+v", err, res)
	}
	if !tampering.done {
		t.Fatal("no sealed event was committed")
	}
	_, err = engine.New(engine.Config{Tools: reg, Store: st, Redactor: redact.New(sealSecret), Codec: codec}).Resume(ctx, f2, "tampered")
	var se *seal.Error
	if fault.ClassOf(err) != fault.Damaged || !errors.As(err, &se) || !strings.Contains(err.Error(), "step/fetch/output") {
		t.Fatalf("Resume of an altered sealed payload = %v, want a damaged error naming step/fetch/output", err)
	}
}

// tamperStore alters the first sealed payload it commits: one byte of its
// ciphertext.
type tamperStore struct {
	store.Store
	done bool
}

func (s *tamperStore) Commit(ctx context.Context, t *store.Transition) error {
	for _, ev := range t.Events {
		if ev.Kind == trace.PayloadsSealed && !s.done {
			i := strings.LastIndex(ev.Data, `"}`) - 3
			c := byte('A')
			if ev.Data[i] == 'A' {
				c = 'B'
			}
			ev.Data = ev.Data[:i] + string(c) + ev.Data[i+1:]
			s.done = true
		}
	}
	return s.Store.Commit(ctx, t)
}

// A step with approval: required whose args hold a secret an earlier step
// returned: the person approves the args the approval recorded (redacted
// in the record, sealed beside it), and the resumed run makes the call
// with the real value, without asking again.
func TestSealedApprovalArgsMatchAfterResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := sealTools(dir, false)
	f, err := flow.Parse([]byte(`name: sealed
steps:
  - {id: fetch, tool: fetch, args: {}}
  - {id: use, tool: use, approval: required, args: {token: "{fetch.token}", pw: "{input.password}"}}
`), "sealed.yaml", &flow.Options{Tools: specsOf(reg)})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(engine.Config{Tools: reg, Store: st, Redactor: redact.New(sealSecret), Codec: sealCodec(t, sealKey(t, "k1", 1))})
	res, err := e.Run(ctx, f, map[string]any{"password": sealSecret}, &engine.RunOptions{RunID: "approve-sealed"})
	if err != nil || res.Status != trace.RunWaiting || len(res.Pending) != 1 {
		t.Fatalf("run: %v %+v", err, res)
	}
	if a := res.Pending[0]; bytes.Contains(a.Args, []byte(sealSecret)) || !bytes.Contains(a.Args, []byte(redact.Mask)) {
		t.Fatalf("the approval's args as a person sees them: %s", a.Args)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "approve-sealed", StepID: "use", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	res, err = e.Resume(ctx, f, "approve-sealed")
	if err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("resume after the approval: %v %+v (pending %+v)", err, res, res.Pending)
	}
	if got := readLines(t, filepath.Join(dir, "use.log")); len(got) != 1 || got[0] != sealUsed {
		t.Fatalf("use was handed %v, want the secret from fetch and the input", got)
	}
	storeHoldsNot(t, st, "approve-sealed", sealSecret)
}

// A compensation whose args hold a secret (the run's input) and that waits
// for a person is made, after the approval and a resume in another engine,
// with the args the live run recorded: the secret, not [REDACTED].
func TestSealedCompensationArgsAfterResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st := openSQLite(t)
	build := func() (*engine.Engine, *flow.Flow) {
		mk := tool.Func(tool.Spec{Name: "make", Effect: tool.EffectWrite, Reversibility: tool.Compensatable,
			Compensate: &tool.Compensation{Tool: "archive", Args: map[string]any{"id": "{output.id}", "who": "{args.to}"}}},
			func(context.Context, any) (any, error) { return map[string]any{"id": "c-1"}, nil })
		archive := tool.Func(tool.Spec{Name: "archive", Effect: tool.EffectWrite}, func(_ context.Context, args any) (any, error) {
			who, _ := args.(map[string]any)["who"].(string)
			f, err := os.OpenFile(filepath.Join(dir, "archive.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, err
			}
			_, err = f.WriteString(who + "\n")
			f.Close()
			return map[string]any{"ok": true}, err
		})
		broken := goTool("broken", func(context.Context, map[string]any) (any, error) { return nil, fault.BusinessErr(errors.New("down")) })
		reg := &tool.Registry{}
		for _, tl := range []tool.Tool{mk, archive, broken} {
			if err := reg.Register(tl); err != nil {
				t.Fatal(err)
			}
		}
		f, err := flow.Parse([]byte(`name: saga
on_failure: compensate
risk: {costs: {tools: {archive: 3}}}
steps:
  - {id: s, tool: make, args: {to: "{input.to}"}}
  - {id: fail, tool: broken, args: {}}
`), "saga.yaml", &flow.Options{Tools: specsOf(reg)})
		if err != nil {
			t.Fatal(err)
		}
		return engine.New(engine.Config{Tools: reg, Store: st, Redactor: redact.New(sealSecret), Codec: sealCodec(t, sealKey(t, "k1", 1))}), f
	}
	e, f := build()
	res, err := e.Run(ctx, f, map[string]any{"to": sealSecret}, &engine.RunOptions{RunID: "saga-sealed"})
	if err != nil || res.Status != trace.RunWaiting || len(res.Pending) != 1 {
		t.Fatalf("run: %v %+v", err, res)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "saga-sealed", StepID: res.Pending[0].StepID, Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	e2, f2 := build()
	if res, err = e2.Resume(ctx, f2, "saga-sealed"); err != nil {
		t.Fatal(err)
	}
	if got := readLines(t, filepath.Join(dir, "archive.log")); len(got) != 1 || got[0] != sealSecret {
		t.Fatalf("the compensation was made with who=%v, want the secret the live run recorded (status %s)", got, res.Status)
	}
	storeHoldsNot(t, st, "saga-sealed", sealSecret)
}

// An enqueued run's input that holds a secret is stored redacted, sealed
// beside it with a key; the worker that starts the run runs it with the
// real input, and the run starts (run_started), as an enqueued run does.
func TestSealedInputOfAnEnqueuedRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, withKey := range []bool{true, false} {
		dir := t.TempDir()
		st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		reg := sealTools(dir, false)
		f := sealFlowFor(t, reg)
		cfg := engine.Config{Tools: reg, Store: st, Redactor: redact.New(sealSecret)}
		if withKey {
			cfg.Codec = sealCodec(t, sealKey(t, "k1", 1))
		}
		e := engine.New(cfg)
		id, err := e.Enqueue(ctx, f, map[string]any{"password": sealSecret}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if dbHolds(t, dir, sealSecret) {
			t.Fatalf("key %v: the enqueued run's input is in the database in clear", withKey)
		}
		res, err := e.Resume(ctx, f, id)
		if err != nil || res.Status != trace.RunSucceeded {
			t.Fatalf("key %v: the worker's start: %v %+v", withKey, err, res)
		}
		want := sealSecret + "|" + redact.Mask
		if withKey {
			want = sealUsed
		}
		if got := readLines(t, filepath.Join(dir, "use.log")); len(got) != 1 || got[0] != want {
			t.Fatalf("key %v: use was handed %v, want %s", withKey, got, want)
		}
		events, _ := st.Events(ctx, id, 0, 0)
		kinds := map[trace.Kind]bool{}
		for _, ev := range events {
			kinds[ev.Kind] = true
		}
		if !kinds[trace.RunStarted] || kinds[trace.RunResumed] {
			t.Fatalf("key %v: the worker's start is journaled as %v", withKey, kinds)
		}
		st.Close()
	}
}
