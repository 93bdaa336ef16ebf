//go:build temporalserver

package servertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/reinhq/rein/internal/conformance"
	"github.com/reinhq/rein/temporal"
)

// conformanceSkip are the cases of the conformance table the Temporal
// backend cannot run yet, with why (docs/temporal.md, Limits). Remove a
// case from here once its feature lands.
var conformanceSkip = map[string]string{}

// killQueue begins the task queue of a case run with a kill, one per case
// (killQueue-RUN): its worker process is the only one on it until it is
// killed, and the worker of this process that takes over stays on it.
const killQueue = "rein-conformance-kill"

// TestConformance runs the conformance table (internal/conformance) on a
// real Temporal server, with the same expectations as the local engine on
// SQLite and PostgreSQL.
func TestConformance(t *testing.T) {
	ts := server(t)
	fs, err := conformanceFlows()
	if err != nil {
		t.Fatal(err)
	}
	ts.NewWorkerWithOptions(queue, register(fs), workerOptions)
	conformance.Run(t, &onTemporal{ts: ts, c: ts.GetDefaultClient(), fs: fs}, conformanceSkip)
}

// conformanceFlows are the table's flows, loaded as each case says.
func conformanceFlows() (*temporal.Flows, error) {
	cases, err := conformance.Cases()
	if err != nil {
		return nil, err
	}
	fs := temporal.NewFlows()
	for _, c := range cases {
		p, err := c.Load()
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.Name, err)
		}
		fs.Add(p)
	}
	return fs, nil
}

// onTemporal is the conformance.Runner of the Temporal backend.
type onTemporal struct {
	ts *temporaltest.TestServer
	c  client.Client
	fs *temporal.Flows
}

func (r *onTemporal) Start(ctx context.Context, c *conformance.Case, id string) (*conformance.Observed, error) {
	return r.start(ctx, c, id, queue)
}

func (r *onTemporal) start(ctx context.Context, c *conformance.Case, id, q string) (*conformance.Observed, error) {
	p, err := c.Load()
	if err != nil {
		return nil, err
	}
	defer p.Close()
	in, err := c.InputValue()
	if err != nil {
		return nil, err
	}
	if _, err := temporal.StartRun(ctx, r.c, p, in, temporal.StartOptions{RunID: id, TaskQueue: q}); err != nil {
		return nil, err
	}
	return r.observe(ctx, id)
}

func (r *onTemporal) Decide(ctx context.Context, id string, d conformance.Decision) (*conformance.Observed, error) {
	if err := temporal.Decide(ctx, r.c, id, temporal.Decision{Step: d.Step, Action: d.Action, Output: d.Output, Comment: d.Comment, By: "conformance"}); err != nil {
		return nil, err
	}
	return r.observe(ctx, id)
}

// StartKilled starts the run on a kill queue of its own, served by a worker process of
// its own (TestConformanceChildWorker) until the calls are in flight;
// then a worker of this process joins the queue and the other is killed.
func (r *onTemporal) StartKilled(ctx context.Context, c *conformance.Case, id string, inFlight func() bool, release func()) (*conformance.Observed, error) {
	child := exec.Command(os.Args[0], "-test.run=^TestConformanceChildWorker$", "-test.v")
	q := killQueue + "-" + id
	child.Env = append(os.Environ(), "REIN_CHILD_HOSTPORT="+r.ts.GetFrontendHostPort(), "REIN_CHILD_NAMESPACE="+r.ts.GetDefaultNamespace(), "REIN_CHILD_QUEUE="+q)
	var out strings.Builder
	child.Stdout, child.Stderr = &out, &out
	if err := child.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = child.Wait(); close(exited) }()
	defer func() { _ = child.Process.Kill(); <-exited }()
	p, err := c.Load()
	if err != nil {
		return nil, err
	}
	defer p.Close()
	in, err := c.InputValue()
	if err != nil {
		return nil, err
	}
	if _, err := temporal.StartRun(ctx, r.c, p, in, temporal.StartOptions{RunID: id, TaskQueue: q}); err != nil {
		return nil, err
	}
	for !inFlight() {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the calls never ran in the worker process: %w\n%s", ctx.Err(), out.String())
		case <-exited:
			return nil, fmt.Errorf("the worker process ended before the calls ran\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	r.ts.NewWorkerWithOptions(q, register(r.fs), workerOptions)
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		return nil, err
	}
	<-exited
	release()
	return r.observe(ctx, id)
}

// TestConformanceChildWorker is the worker process of the conformance
// case run with a kill (onTemporal.StartKilled): it runs only when
// REIN_CHILD_HOSTPORT is set.
func TestConformanceChildWorker(t *testing.T) {
	hp := os.Getenv("REIN_CHILD_HOSTPORT")
	if hp == "" {
		t.Skip("the worker process of the conformance case run with a kill")
	}
	c, err := client.Dial(client.Options{HostPort: hp, Namespace: os.Getenv("REIN_CHILD_NAMESPACE")})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := conformanceFlows()
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(c, os.Getenv("REIN_CHILD_QUEUE"), workerOptions)
	register(fs)(w)
	if err := w.Run(make(chan any)); err != nil {
		t.Fatal(err)
	}
}

// observe follows the run until it settles or waits, and reads its status
// and pending approvals (the workflow's queries, or its result).
func (r *onTemporal) observe(ctx context.Context, id string) (*conformance.Observed, error) {
	st, err := temporal.Follow(ctx, r.c, id, 20*time.Millisecond, nil)
	if err != nil {
		return nil, err
	}
	o := &conformance.Observed{Status: st.Status, Steps: map[string]string{}}
	if u := st.Usage; u != nil {
		o.Usage = &conformance.Usage{Iterations: u.Iterations, LLMCalls: u.LLMCalls, TokensIn: u.TokensIn, TokensOut: u.TokensOut}
	}
	if st.Error != nil {
		o.Class = st.Error.Class
	}
	for _, s := range st.Steps {
		o.Steps[s.ID] = s.Status
	}
	if st.Status == "waiting" {
		var pend []temporal.Pending
		if err := temporal.Query(ctx, r.c, id, temporal.QueryPending, &pend); err != nil {
			return nil, err
		}
		for _, p := range pend {
			o.Pending = append(o.Pending, p.Step)
		}
		sort.Strings(o.Pending)
	}
	return o, nil
}
