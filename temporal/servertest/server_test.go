//go:build temporalserver

// Package servertest runs rein's Temporal workflow against a real
// Temporal server started in-process (go.temporal.io/server/temporaltest):
// go test -tags temporalserver ./servertest. Its binary is large and slow
// to build cold (docs/temporal.md), hence the build tag.
package servertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/temporal"
	"github.com/reinhq/rein/tool"
)

const queue = "rein-test"

// beat is the attempts' heartbeat here: a killed worker's attempt times
// out after three of them. workerOptions are every test worker's: the SDK
// sends each heartbeat (temporal.WorkerOptions), so a live attempt has two
// beats of slack on a loaded machine.
const beat = time.Second

var workerOptions = temporal.WorkerOptions(worker.Options{}, beat)

// ledger appends one line per tool execution to a file, from every
// process: "tool key pid".
type ledger struct {
	path string
	mu   sync.Mutex
}

func (l *ledger) add(name, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s %d\n", name, key, os.Getpid())
}

// lines are the ledger's lines for tool name: "key pid".
func (l *ledger) lines(name string) []string {
	data, _ := os.ReadFile(l.path)
	var out []string
	for _, ln := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if rest, ok := strings.CutPrefix(ln, name+" "); ok {
			out = append(out, rest)
		}
	}
	return out
}

// tools are the test flows' tools; with block, the slow ones record
// their call and then never return (their worker is to be killed).
func (l *ledger) tools(block bool) []tool.Tool {
	mk := func(name string, idempotent, slow bool) tool.Tool {
		return tool.Func(tool.Spec{Name: name, Effect: tool.EffectWrite, Idempotent: idempotent}, func(ctx context.Context, args any) (any, error) {
			l.add(name, tool.CallInfoFrom(ctx).IdempotencyKey)
			if slow && block {
				<-ctx.Done()
				select {} // a killed worker never answers
			}
			return map[string]any{"tool": name, "pid": float64(os.Getpid())}, nil
		})
	}
	return []tool.Tool{mk("ok", true, false), mk("pay", false, false), mk("slow_safe", true, true), mk("slow_charge", false, true),
		l.checked(mk("slow_refund", false, true))}
}

// flows loads the test flows with l's tools.
func (l *ledger) flows(t testing.TB, block bool) *temporal.Flows {
	fs := temporal.NewFlows()
	for _, d := range []string{"approve", "takeover", "agent", "agentkill", "eachkill", "plankill"} {
		p, err := project.Load(filepath.Join("..", "testdata", "flows", d), &project.LoadOptions{Tools: l.tools(block)})
		if err != nil {
			t.Fatal(err)
		}
		fs.Add(p)
	}
	return fs
}

func load(t *testing.T, name string, l *ledger) *project.Project {
	p, err := project.Load(filepath.Join("..", "testdata", "flows", name), &project.LoadOptions{Tools: l.tools(false)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func register(fs *temporal.Flows) func(worker.Registry) {
	return func(r worker.Registry) {
		temporal.Register(r, &temporal.Workflow{Flows: fs, Heartbeat: beat}, &temporal.Activities{Flows: fs, Heartbeat: beat})
	}
}

func server(t *testing.T) *temporaltest.TestServer {
	t.Setenv("TEMPORAL_VERSION_CHECK_DISABLED", "1")
	return temporaltest.NewServer(temporaltest.WithT(t))
}

func follow(t *testing.T, c client.Client, id string) *temporal.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := temporal.Follow(ctx, c, id, 50*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("follow %s: %v", id, err)
	}
	return st
}

// TestApprovalEndToEnd: a run of a flow with an approval step and an
// approval-required tool step, on a real server: it waits, a decision the
// run cannot take is refused by the update's validator, approvals let it
// go on, the non-idempotent tool runs once, and the workflow reads as the
// flow in Temporal (type = flow name, id = run id).
func TestApprovalEndToEnd(t *testing.T) {
	ts := server(t)
	l := &ledger{path: filepath.Join(t.TempDir(), "ledger")}
	ts.NewWorkerWithOptions(queue, register(l.flows(t, false)), workerOptions)
	c := ts.GetDefaultClient()
	ctx := context.Background()
	p := load(t, "approve", l)
	wr, err := temporal.StartRun(ctx, c, p, map[string]any{"n": 3}, temporal.StartOptions{RunID: "run-approve", TaskQueue: queue})
	if err != nil {
		t.Fatal(err)
	}
	// an idempotent start: the same run id is the same run.
	again, err := temporal.StartRun(ctx, c, p, map[string]any{"n": 3}, temporal.StartOptions{RunID: "run-approve", TaskQueue: queue})
	if err != nil || again.GetRunID() != wr.GetRunID() {
		t.Fatalf("second start: %v, %s vs %s", err, again.GetRunID(), wr.GetRunID())
	}
	if st := follow(t, c, "run-approve"); st.Status != "waiting" {
		t.Fatalf("run: %+v", st)
	}
	if err := temporal.Decide(ctx, c, "run-approve", temporal.Decision{Step: "pay", Action: temporal.ActionApprove}); err == nil || !strings.Contains(err.Error(), "waits for no decision") {
		t.Fatalf("a decision on a step that waits for nothing: %v", err)
	}
	if err := temporal.Decide(ctx, c, "run-approve", temporal.Decision{Step: "sign", Action: temporal.ActionApprove, By: "ana"}); err != nil {
		t.Fatal(err)
	}
	var pend []temporal.Pending
	waitFor(t, func() bool {
		pend = nil
		return temporal.Query(ctx, c, "run-approve", temporal.QueryPending, &pend) == nil && len(pend) == 1 && pend[0].Step == "pay"
	})
	if err := temporal.Decide(ctx, c, "run-approve", temporal.Decision{Step: "pay", Action: temporal.ActionApprove, By: "ana"}); err != nil {
		t.Fatal(err)
	}
	st := follow(t, c, "run-approve")
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if got := l.lines("pay"); len(got) != 1 || !strings.HasPrefix(got[0], "run-approve/pay/1 ") {
		t.Errorf("pay executions %v, want one with key run-approve/pay/1", got)
	}
	d, err := c.DescribeWorkflowExecution(ctx, "run-approve", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.WorkflowExecutionInfo.Type.Name; got != "approve" {
		t.Errorf("workflow type %q, want the flow's name", got)
	}
	saveHistory(t, c, "run-approve")
}

// saveHistory writes a run's history under testdata/histories when
// REIN_UPDATE_HISTORIES=1 (the replay test feeds them to the SDK's
// replayer).
func saveHistory(t *testing.T, c client.Client, id string) {
	name := id + ".json"
	if os.Getenv("REIN_UPDATE_HISTORIES") != "1" {
		return
	}
	it := c.GetWorkflowHistory(context.Background(), id, "", false, 0)
	h := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "testdata", "histories", name), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote testdata/histories/%s (%d events)", name, len(h.Events))
}

// waitFor polls cond (a real server's state) until it holds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// program builds the rein-temporal program into a temporary folder.
func program(t *testing.T) string {
	t.Helper()
	prog := filepath.Join(t.TempDir(), "rein-temporal")
	if out, err := exec.Command("go", "build", "-o", prog, "github.com/reinhq/rein/temporal/cmd/rein-temporal").CombinedOutput(); err != nil {
		t.Fatalf("build rein-temporal: %v\n%s", err, out)
	}
	return prog
}

// commander returns a function that runs prog with its args and then
// conn (the server's flags), env added to its environment, and returns
// its exit code, stdout and stderr; a program that does not start fails
// the test.
func commander(t *testing.T, prog string, conn, env []string) func(args ...string) (int, string, string) {
	return func(args ...string) (int, string, string) {
		t.Helper()
		var out, errs bytes.Buffer
		cmd := exec.Command(prog, append(args, conn...)...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = &out, &errs
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%v: %v", args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errs.String()
	}
}
