package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain keeps every test that does not pass --db off the developer's
// run store (and out of ./.rein in this folder): runs without --db are
// throwaway.
func TestMain(m *testing.M) {
	os.Setenv("REIN_DB", ":memory:")
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binDir holds the rein binary the process tests build (reinBinary).
var binDir string

// reinBinary builds rein once for the tests that run it as a process.
var reinBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "rein-test-bin-")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "rein")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
})

// durableFixture is a copy of a testdata flow folder and a SQLite file.
type durableFixture struct {
	t   *testing.T
	dir string // the flow folder; its tools append to calls.log here
	db  string
}

func newDurable(t *testing.T, flow string) *durableFixture {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, flow)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", flow))); err != nil {
		t.Fatal(err)
	}
	return &durableFixture{t: t, dir: dir, db: filepath.Join(root, "rein.db")}
}

// cli runs rein with --db appended.
func (fx *durableFixture) cli(args ...string) (int, string, string) {
	fx.t.Helper()
	return cli(fx.t, append(args, "--db", fx.db)...)
}

// run starts the flow with input and decodes the JSON result.
func (fx *durableFixture) run(wantCode int, input string, extra ...string) durableResult {
	fx.t.Helper()
	code, out, stderr := fx.cli(append([]string{"run", fx.dir, "--input-json", input, "--output", "json"}, extra...)...)
	if code != wantCode {
		fx.t.Fatalf("rein run: exit %d, want %d\nstdout: %s\nstderr: %s", code, wantCode, out, stderr)
	}
	var res durableResult
	decodeOne(fx.t, out, &res)
	return res
}

// calls returns the lines the tools appended to calls.log.
func (fx *durableFixture) calls() []string {
	fx.t.Helper()
	b, err := os.ReadFile(filepath.Join(fx.dir, "calls.log"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		fx.t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), " ", "@"))
}

type durableResult struct {
	RunID    string                    `json:"run_id"`
	Status   string                    `json:"status"`
	Outputs  map[string]map[string]any `json:"outputs"`
	Steps    map[string]map[string]any `json:"steps"`
	Existing bool                      `json:"existing"`
	Error    *struct{ Class, Step, Message string }
	Pending  []struct {
		StepID  string          `json:"step_id"`
		Kind    string          `json:"kind"`
		Status  string          `json:"status"`
		Tool    string          `json:"tool"`
		Args    json.RawMessage `json:"args"`
		Message string          `json:"message"`
	} `json:"pending"`
}

type decision struct {
	Approval struct {
		StepID, Status, Comment string
		DecidedBy               string `json:"decided_by"`
	} `json:"approval"`
	Result *durableResult `json:"result"`
}

func wantCalls(t *testing.T, got []string, steps ...string) {
	t.Helper()
	var ids []string
	for _, c := range got {
		ids = append(ids, strings.SplitN(c, "@", 2)[0])
	}
	if strings.Join(ids, ",") != strings.Join(steps, ",") {
		t.Fatalf("tool calls %v, want steps %v", got, steps)
	}
}

func TestDurableRunListShowTrace(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "once")
	res := fx.run(exitOK, `{"order": "A-1"}`)
	if res.Status != "succeeded" || res.RunID == "" || len(res.Pending) != 0 {
		t.Fatalf("result %+v", res)
	}

	code, out, stderr := fx.cli("runs", "list")
	if code != exitOK || !strings.Contains(out, res.RunID) || !strings.Contains(out, "once") || !strings.Contains(out, "succeeded") {
		t.Fatalf("runs list: exit %d\n%s%s", code, out, stderr)
	}
	var runs []struct{ ID, Flow, Status string }
	code, out, _ = fx.cli("runs", "list", "--output", "json", "--flow", "once", "--status", "succeeded", "--limit", "5")
	decodeOne(t, out, &runs)
	if code != exitOK || len(runs) != 1 || runs[0].ID != res.RunID || runs[0].Status != "succeeded" {
		t.Fatalf("runs list json: exit %d %+v", code, runs)
	}
	code, out, _ = fx.cli("runs", "list", "--output", "json", "--status", "failed")
	if code != exitOK || strings.TrimSpace(out) != "[]" {
		t.Fatalf("runs list --status failed: exit %d %s", code, out)
	}

	var view struct {
		Run struct {
			ID, Status string
			FlowPath   string `json:"flow_path"`
			Input      map[string]any
		}
		Steps []struct {
			StepID  string `json:"step_id"`
			Status  string
			Attempt int
			Output  map[string]any
		}
		Approvals []any
	}
	code, out, _ = fx.cli("runs", "show", res.RunID, "--output", "json")
	decodeOne(t, out, &view)
	if code != exitOK || view.Run.ID != res.RunID || view.Run.Input["order"] != "A-1" || len(view.Steps) != 1 ||
		view.Steps[0].StepID != "book" || view.Steps[0].Attempt != 1 || view.Steps[0].Output["recorded"] != true || view.Approvals == nil {
		t.Fatalf("runs show json: exit %d %+v\n%s", code, view, out)
	}
	if !filepath.IsAbs(view.Run.FlowPath) {
		t.Errorf("the run records flow path %q: a resume from another folder needs it absolute", view.Run.FlowPath)
	}
	code, out, _ = fx.cli("runs", "show", res.RunID)
	for _, want := range []string{"run " + res.RunID, "status     succeeded", "book", "attempts=1", `output: {"recorded":true}`} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("runs show lacks %q: exit %d\n%s", want, code, out)
		}
	}

	code, out, _ = fx.cli("runs", "trace", res.RunID)
	if code != exitOK || !strings.Contains(out, "slowest steps") || !strings.Contains(out, "book") || !strings.Contains(out, "succeeded") {
		t.Fatalf("runs trace: exit %d\n%s", code, out)
	}
	code, out, _ = fx.cli("runs", "trace", res.RunID, "--output", "json")
	var sum struct {
		Runs []struct {
			RunID  string `json:"run_id"`
			Status string
			Steps  []struct {
				StepID string `json:"step_id"`
			}
		}
	}
	decodeOne(t, out, &sum)
	if code != exitOK || len(sum.Runs) != 1 || sum.Runs[0].RunID != res.RunID || sum.Runs[0].Status != "succeeded" || len(sum.Runs[0].Steps) != 1 {
		t.Fatalf("runs trace json: exit %d %+v", code, sum)
	}
	code, out, _ = fx.cli("runs", "trace", res.RunID, "--jsonl")
	var kinds []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e struct {
			Seq   int64
			Kind  string
			RunID string `json:"run_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.RunID != res.RunID || e.Seq != int64(len(kinds)+1) {
			t.Fatalf("line %d of --jsonl: %v %+v: %s", len(kinds)+1, err, e, sc.Text())
		}
		kinds = append(kinds, e.Kind)
	}
	if code != exitOK || strings.Join(kinds, ",") != "run_started,step_started,tool_process,call,step_settled,run_settled" {
		t.Fatalf("runs trace --jsonl: exit %d, kinds %v", code, kinds)
	}
}

// TestRunsJSONRetention: a run's retention is printed as a duration that
// --older-than and a flow's retention: accept, not as nanoseconds.
func TestRunsJSONRetention(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "rein.db")
	kept := writeFlow(t, "name: kept\nretention: 30d\ntools:\n  e: {command: [cat], effect: none}\nsteps:\n  - {id: a, tool: e, args: {}}\n")
	plain := writeFlow(t, "name: plain\ntools:\n  e: {command: [cat], effect: none}\nsteps:\n  - {id: a, tool: e, args: {}}\n")
	for _, f := range []string{kept, plain} {
		if code, _, stderr := cli(t, "run", f, "--db", db); code != exitOK {
			t.Fatalf("run %s: exit %d %s", f, code, stderr)
		}
	}
	var runs []map[string]any
	code, out, _ := cli(t, "runs", "list", "-o", "json", "--db", db)
	decodeOne(t, out, &runs)
	if code != exitOK || len(runs) != 2 {
		t.Fatalf("runs list: exit %d\n%s", code, out)
	}
	for _, r := range runs {
		want, ok := map[string]any{"kept": "720h0m0s"}[r["flow"].(string)]
		if got, has := r["retention"]; got != want || has != ok {
			t.Errorf("runs list: run of flow %s has retention %#v, want %#v", r["flow"], got, want)
		}
		if r["id"] == nil || r["status"] != "succeeded" {
			t.Errorf("runs list: the row lost its other fields: %v", r)
		}
	}
	var view struct{ Run map[string]any }
	for _, r := range runs {
		if r["flow"] != "kept" {
			continue
		}
		code, out, _ = cli(t, "runs", "show", r["id"].(string), "-o", "json", "--db", db)
		decodeOne(t, out, &view)
		if code != exitOK || view.Run["retention"] != "720h0m0s" || view.Run["flow"] != "kept" {
			t.Fatalf("runs show: exit %d, run %v", code, view.Run)
		}
	}
}

func TestIdempotentStartReturnsTheSameRun(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "once")
	first := fx.run(exitOK, `{"order": "A-1"}`)
	second := fx.run(exitOK, `{"order": "A-1"}`)
	if second.RunID != first.RunID || !second.Existing || first.Existing || second.Status != "succeeded" {
		t.Fatalf("second start %+v, want run %s again", second, first.RunID)
	}
	if second.Outputs["book"]["recorded"] != true {
		t.Fatalf("the existing run's outputs are missing: %+v", second)
	}
	wantCalls(t, fx.calls(), "book")
	code, _, stderr := fx.cli("run", fx.dir, "--input-json", `{"order": "A-1"}`)
	if code != exitOK || !strings.Contains(stderr, "started earlier") || !strings.Contains(stderr, first.RunID) {
		t.Fatalf("text start: exit %d, stderr %s", code, stderr)
	}
	other := fx.run(exitOK, `{"order": "B-2"}`)
	if other.RunID == first.RunID || other.Existing {
		t.Fatalf("another input gave run %s again", other.RunID)
	}
	wantCalls(t, fx.calls(), "book", "book")
}

func TestApprovalWaitsThenApproveContinues(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "approval")
	code, out, stderr := fx.cli("run", fx.dir)
	if code != exitWaiting {
		t.Fatalf("run: exit %d, want 3\n%s%s", code, out, stderr)
	}
	id := strings.Fields(out)[1]
	id = strings.TrimSuffix(id, ":")
	for _, want := range []string{"waiting for 1 decision", "step review (approval)", "publish the draft?",
		"rein runs approve " + id + " review --db " + fx.db, "rein runs reject " + id + " review", "rein runs settle " + id + " review --value"} {
		if !strings.Contains(out, want) {
			t.Errorf("waiting result lacks %q:\n%s", want, out)
		}
	}
	wantCalls(t, fx.calls(), "draft")

	// a step that does not wait, and one that does not exist
	code, _, stderr = fx.cli("runs", "approve", id, "draft")
	if code != exitUsage || !strings.Contains(stderr, "no pending approval for step draft") || !strings.Contains(stderr, "waiting for a decision: review") {
		t.Fatalf("approve draft: exit %d %s", code, stderr)
	}

	var d decision
	code, out, stderr = fx.cli("runs", "approve", id, "review", "--comment", "looks good", "--output", "json")
	decodeOne(t, out, &d)
	if code != exitWaiting || d.Approval.Status != "approved" || d.Approval.Comment != "looks good" || d.Approval.DecidedBy == "" ||
		d.Result == nil || d.Result.Status != "waiting" || len(d.Result.Pending) != 1 {
		t.Fatalf("approve review: exit %d %+v\n%s", code, d, stderr)
	}
	p := d.Result.Pending[0]
	var args bytes.Buffer
	_ = json.Compact(&args, p.Args)
	if p.StepID != "publish" || p.Kind != "approval" || p.Tool != "record" || args.String() != `{"what":"publish"}` {
		t.Fatalf("pending %+v: want what publish would run, with which arguments", p)
	}
	if out := d.Result.Outputs["review"]; out["approved"] != true || out["comment"] != "looks good" {
		t.Fatalf("review output %v", out)
	}
	wantCalls(t, fx.calls(), "draft")

	code, _, stderr = fx.cli("runs", "approve", id, "review")
	if code != exitUsage || !strings.Contains(stderr, "already approved") {
		t.Fatalf("approve twice: exit %d %s", code, stderr)
	}

	code, out, stderr = fx.cli("runs", "approve", id, "publish")
	if code != exitOK || !strings.Contains(out, "succeeded") {
		t.Fatalf("approve publish: exit %d\n%s%s", code, out, stderr)
	}
	calls := fx.calls()
	wantCalls(t, calls, "draft", "publish")
	if calls[1] != "publish@"+id+"/publish/1" {
		t.Fatalf("publish ran with idempotency key %q", calls[1])
	}

	// resume of a finished run is a no-op
	code, out, stderr = fx.cli("runs", "resume", id, "--output", "json")
	var res durableResult
	decodeOne(t, out, &res)
	if code != exitOK || res.Status != "succeeded" || !strings.Contains(stderr, "already succeeded") {
		t.Fatalf("resume finished run: exit %d %+v %s", code, res, stderr)
	}
	wantCalls(t, fx.calls(), "draft", "publish")
	code, _, stderr = fx.cli("runs", "approve", id, "publish")
	if code != exitUsage || !strings.Contains(stderr, "already succeeded") {
		t.Fatalf("approve a finished run: exit %d %s", code, stderr)
	}
}

func TestApprovalRejectFailsTheRun(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "approval")
	res := fx.run(exitWaiting, `{}`)
	if len(res.Pending) != 1 || res.Pending[0].StepID != "review" || res.Pending[0].Message != "publish the draft?" {
		t.Fatalf("pending %+v", res.Pending)
	}
	// resuming with nothing decided waits again, and runs nothing
	code, out, _ := fx.cli("runs", "resume", res.RunID)
	if code != exitWaiting || !strings.Contains(out, "waiting for 1 decision") {
		t.Fatalf("resume undecided: exit %d\n%s", code, out)
	}
	var d decision
	code, out, stderr := fx.cli("runs", "reject", res.RunID, "review", "--comment", "not yet", "-o", "json")
	decodeOne(t, out, &d)
	if code != exitRunFailed || d.Approval.Status != "rejected" || d.Result == nil || d.Result.Status != "failed" ||
		d.Result.Error == nil || !strings.Contains(d.Result.Error.Message, "rejected") || !strings.Contains(d.Result.Error.Message, "not yet") {
		t.Fatalf("reject: exit %d %+v %s", code, d, stderr)
	}
	wantCalls(t, fx.calls(), "draft")
}

func TestSettleRecordsTheOutput(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "approval")
	res := fx.run(exitWaiting, `{}`)
	if code, _, stderr := fx.cli("runs", "settle", res.RunID, "review"); code != exitUsage || !strings.Contains(stderr, "--value") {
		t.Fatalf("settle without --value: exit %d %s", code, stderr)
	}
	if code, _, stderr := fx.cli("runs", "settle", res.RunID, "review", "--value", `{"x": `); code != exitUsage || !strings.Contains(stderr, "--value is not JSON") {
		t.Fatalf("settle with bad JSON: exit %d %s", code, stderr)
	}
	if code, _, stderr := fx.cli("runs", "settle", res.RunID, "review", "--value", `{}`, "-o", "yaml"); code != exitUsage || !strings.Contains(stderr, "--output must be text or json") {
		t.Fatalf("settle -o yaml: exit %d %s", code, stderr)
	}
	code, out, stderr := fx.cli("runs", "approve", res.RunID, "review", "--no-resume")
	if code != exitOK || !strings.Contains(out, "rein runs resume "+res.RunID) {
		t.Fatalf("approve --no-resume: exit %d %s %s", code, out, stderr)
	}
	if code, out, _ = fx.cli("runs", "resume", res.RunID); code != exitWaiting || !strings.Contains(out, "step publish (approval)") {
		t.Fatalf("resume after the decision: exit %d\n%s", code, out)
	}
	var d decision
	code, out, stderr = fx.cli("runs", "settle", res.RunID, "publish", "--value", `{"recorded": false, "by": "hand"}`, "-o", "json")
	decodeOne(t, out, &d)
	if code != exitOK || d.Approval.Status != "settled" || d.Result == nil || d.Result.Status != "succeeded" ||
		d.Result.Outputs["publish"]["by"] != "hand" || strings.Contains(stderr, "deprecated") {
		t.Fatalf("settle: exit %d %+v %s", code, d, stderr)
	}
	wantCalls(t, fx.calls(), "draft") // settled by hand: the tool never ran
}

// TestSettleOldSpelling: settle took the step's output as --output JSON and
// the format as --format before -o/--output meant the format everywhere;
// that spelling still works, with a warning.
func TestSettleOldSpelling(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "approval")
	res := fx.run(exitWaiting, `{}`)
	var d decision
	code, out, stderr := fx.cli("runs", "settle", res.RunID, "review", "--output", `{"approved": true}`, "--format", "json")
	decodeOne(t, out, &d)
	if code != exitWaiting || d.Approval.Status != "settled" || !strings.Contains(stderr, "--value JSON") || !strings.Contains(stderr, "deprecated") {
		t.Fatalf("settle --output JSON --format json: exit %d %+v\n%s", code, d, stderr)
	}
	code, out, stderr = fx.cli("runs", "settle", res.RunID, "publish", "--output", `{"recorded": true}`)
	if code != exitOK || !strings.Contains(out, "settled") || !strings.Contains(stderr, "deprecated") {
		t.Fatalf("settle --output JSON: exit %d\n%s%s", code, out, stderr)
	}
}

func TestCancelAndPrune(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "approval")
	res := fx.run(exitWaiting, `{}`)
	code, out, stderr := fx.cli("runs", "cancel", res.RunID, "--reason", "not this week")
	if code != exitOK || !strings.Contains(out, "cancelled") {
		t.Fatalf("cancel: exit %d %s %s", code, out, stderr)
	}
	code, out, _ = fx.cli("runs", "show", res.RunID)
	if code != exitOK || !strings.Contains(out, "status     cancelled") || !strings.Contains(out, "not this week") {
		t.Fatalf("show cancelled: exit %d\n%s", code, out)
	}
	if code, _, stderr = fx.cli("runs", "cancel", res.RunID); code != exitUsage || !strings.Contains(stderr, "already cancelled") {
		t.Fatalf("cancel twice: exit %d %s", code, stderr)
	}
	if code, _, stderr = fx.cli("runs", "approve", res.RunID, "review"); code != exitUsage || !strings.Contains(stderr, "already cancelled") {
		t.Fatalf("approve a cancelled run: exit %d %s", code, stderr)
	}
	waiting := fx.run(exitWaiting, `{}`)

	for _, bad := range [][]string{{"--older-than", "soon"}, {"--older-than", "1d", "--status", "waiting"}} {
		if code, _, stderr := fx.cli(append([]string{"runs", "prune"}, bad...)...); code != exitUsage {
			t.Fatalf("prune %v: exit %d %s", bad, code, stderr)
		}
	}
	code, out, _ = fx.cli("runs", "prune", "--older-than", "30d")
	if code != exitOK || strings.TrimSpace(out) != "pruned 0 runs and 0 blobs" {
		t.Fatalf("prune 30d: exit %d %q", code, out)
	}
	code, out, _ = fx.cli("runs", "prune", "--older-than", "0s", "--status", "succeeded", "--output", "json")
	if code != exitOK || !strings.Contains(out, `"runs": 0`) {
		t.Fatalf("prune succeeded: exit %d %s", code, out)
	}
	time.Sleep(2 * time.Millisecond)
	code, out, _ = fx.cli("runs", "prune", "--older-than", "1ms", "--vacuum")
	if code != exitOK || !strings.HasPrefix(out, "pruned 1 run and ") {
		t.Fatalf("prune: exit %d %q", code, out)
	}
	if code, _, stderr = fx.cli("runs", "show", res.RunID); code != exitUsage || !strings.Contains(stderr, "is not in") {
		t.Fatalf("show a pruned run: exit %d %s", code, stderr)
	}
	if code, _, _ = fx.cli("runs", "show", waiting.RunID); code != exitOK {
		t.Fatalf("prune deleted the waiting run: exit %d", code)
	}
}

func TestRunsErrors(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "once")
	fx.run(exitOK, `{"order": "A-1"}`)
	for _, args := range [][]string{
		{"runs", "show", "nope"}, {"runs", "trace", "nope"}, {"runs", "resume", "nope"},
		{"runs", "cancel", "nope"}, {"runs", "approve", "nope", "s"}, {"runs", "reject", "nope", "s"},
		{"runs", "settle", "nope", "s", "--value", "{}"},
	} {
		code, out, stderr := fx.cli(args...)
		if code != exitUsage || !strings.Contains(stderr, "run nope is not in "+fx.db) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %s", args, code, out, stderr)
		}
	}
	// -o json: stdout holds the one error envelope, with the library's
	// class and hint under the CLI's words.
	code, out, _ := fx.cli("runs", "show", "nope", "-o", "json")
	var env struct {
		Error struct {
			Class     string
			Message   string
			Retryable bool
			Hint      struct{ Code string }
		}
	}
	if err := json.Unmarshal([]byte(out), &env); code != exitUsage || err != nil || env.Error.Class != "not_found" ||
		env.Error.Hint.Code != "no_run" || env.Error.Retryable || !strings.Contains(env.Error.Message, "run nope is not in") {
		t.Errorf("show nope -o json: exit %d, stdout %s", code, out)
	}
	notDB := filepath.Join(t.TempDir(), "garbage.db")
	if err := os.WriteFile(notDB, bytes.Repeat([]byte("not a database "), 500), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"runs", "list", "--db", notDB}, {"run", fx.dir, "--input-json", `{"order": "x"}`, "--db", notDB},
		{"runs", "list", "--db", filepath.Join(notDB, "below-a-file", "rein.db")},
	} {
		code, _, stderr := cli(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "--db") {
			t.Errorf("%v: exit %d, stderr %s", args, code, stderr)
		}
	}
	wantCalls(t, fx.calls(), "book") // the run with a bad --db ran nothing
	for _, args := range [][]string{
		{"runs", "list", "--output", "yaml"}, {"runs", "show", "x", "-o", "xml"}, {"runs", "list", "--status", "done"},
		{"runs", "settle", "x", "s", "--output", "{}", "--format", "yaml"}, {"runs", "settle", "x", "s", "--value", "{}", "-o", "xml"},
		{"run", fx.dir, "--output", "yaml"},
		{"runs", "approve", "only-a-run"}, {"worker", "--concurrency", "0"}, {"runs", "bogus"},
	} {
		if code, _, stderr := fx.cli(args...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2: %s", args, code, stderr)
		}
	}
	// a session flow needs --session; nothing is recorded without it
	sess := writeFlow(t, "name: s\nidempotency: session_workflow_input_hash\ntools:\n  e: {command: [cat], effect: none}\nsteps:\n  - {id: a, tool: e, args: {}}\n")
	if code, _, stderr := fx.cli("run", sess); code != exitUsage || !strings.Contains(stderr, "--session") {
		t.Fatalf("session flow without --session: exit %d %s", code, stderr)
	}
	var a, b, c durableResult
	for _, r := range []struct {
		res     *durableResult
		session string
	}{{&a, "s1"}, {&b, "s1"}, {&c, "s2"}} {
		code, out, stderr := fx.cli("run", sess, "--session", r.session, "-o", "json")
		if code != exitOK {
			t.Fatalf("session %s: exit %d %s", r.session, code, stderr)
		}
		decodeOne(t, out, r.res)
	}
	if a.RunID != b.RunID || !b.Existing || c.RunID == a.RunID {
		t.Fatalf("sessions: %s %s %s", a.RunID, b.RunID, c.RunID)
	}
}

func TestDetachThenWorker(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "once")
	var ids []string
	for _, order := range []string{"A", "B", "C"} {
		code, out, stderr := fx.cli("run", fx.dir, "--detach", "--input-json", `{"order": "`+order+`"}`)
		if code != exitOK || !strings.Contains(stderr, "rein worker --db") {
			t.Fatalf("run --detach: exit %d %s %s", code, out, stderr)
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	if len(fx.calls()) != 0 {
		t.Fatal("--detach ran the flow")
	}
	code, out, _ := fx.cli("runs", "list", "--status", "pending", "-o", "json")
	var pending []struct{ ID string }
	decodeOne(t, out, &pending)
	if code != exitOK || len(pending) != 3 {
		t.Fatalf("pending runs: %+v", pending)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	codec := make(chan int, 1)
	go func() {
		codec <- Main(ctx, []string{"worker", "--db", fx.db, "--concurrency", "2", "--poll", "20ms", "--grace", "0s"},
			strings.NewReader(""), &bytes.Buffer{}, &stderr)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for len(fx.calls()) < 3 || !allSucceeded(t, fx, ids) {
		if time.Now().After(deadline) {
			cancel()
			<-codec
			t.Fatalf("the worker did not run the runs: calls %v\n%s", fx.calls(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-codec; code != exitInterrupted {
		t.Fatalf("worker exit %d, want 130", code)
	}
	wantCalls(t, fx.calls(), "book", "book", "book")
}

func allSucceeded(t *testing.T, fx *durableFixture, ids []string) bool {
	t.Helper()
	_, out, _ := fx.cli("runs", "list", "--status", "succeeded", "-o", "json")
	var runs []struct{ ID string }
	if json.Unmarshal([]byte(out), &runs) != nil {
		return false
	}
	return len(runs) == len(ids)
}

func TestRedactDSN(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://rein:s3cret@db:5432/rein":     "postgres://rein:xxxxx@db:5432/rein",
		"postgres://rein@db/rein":                 "postgres://rein@db/rein",
		"postgres://rein@db/rein?password=s3cret": "postgres://rein@db/rein?password=xxxxx",
		"host=db password=s3cret user=rein":       "host=db password=xxxxx user=rein",
		".rein/rein.db":                           ".rein/rein.db",
		":memory:":                                ":memory:",
	} {
		if got := redactDSN(in); got != want {
			t.Errorf("redactDSN(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEscalateWaitsThenApproveTriesAgain(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "escalate")
	code, out, stderr := fx.cli("run", fx.dir)
	if code != exitWaiting {
		t.Fatalf("run: exit %d, want 3\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"waiting for 1 decision", "step charge (escalation)", "card declined", "rein runs approve "} {
		if !strings.Contains(out, want) {
			t.Errorf("waiting result lacks %q:\n%s", want, out)
		}
	}
	wantCalls(t, fx.calls(), "charge")
	id := strings.TrimSuffix(strings.Fields(out)[1], ":")
	var d decision
	code, out, stderr = fx.cli("runs", "approve", id, "charge", "-o", "json")
	decodeOne(t, out, &d)
	if code != exitOK || d.Result == nil || d.Result.Status != "succeeded" || d.Result.Outputs["charge"]["charged"] != true {
		t.Fatalf("approve: exit %d %+v\n%s", code, d, stderr)
	}
	if got := fx.calls(); len(got) != 3 || !strings.HasSuffix(got[1], "/charge/2") {
		t.Fatalf("calls %v: approve runs the step's next attempt, then the rest", got)
	}
}

func TestEscalateRejectFailsWithTheError(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "escalate")
	res := fx.run(exitWaiting, `{}`)
	if len(res.Pending) != 1 || res.Pending[0].Kind != "escalation" || !strings.Contains(res.Pending[0].Message, "card declined") {
		t.Fatalf("pending %+v", res.Pending)
	}
	var d decision
	code, out, stderr := fx.cli("runs", "reject", res.RunID, "charge", "-o", "json")
	decodeOne(t, out, &d)
	if code != exitRunFailed || d.Result == nil || d.Result.Error == nil || d.Result.Error.Class != "business" ||
		!strings.Contains(d.Result.Error.Message, "card declined") {
		t.Fatalf("reject: exit %d %+v %s", code, d, stderr)
	}
	wantCalls(t, fx.calls(), "charge")
}
