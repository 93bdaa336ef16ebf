package conformance_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/internal/conformance"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/postgres"
	_ "github.com/reinhq/rein/store/sqlite"
)

// localSkip are the cases the local engine cannot run yet, with why.
var localSkip = map[string]string{}

// childLease is the lease of the worker process StartKilled kills: the
// run is free for another worker that long after the kill.
const childLease = time.Second

// TestConformanceSQLite runs the table on the local engine with a SQLite
// store.
func TestConformanceSQLite(t *testing.T) {
	l := &local{db: filepath.Join(t.TempDir(), "rein.db")}
	t.Cleanup(l.close)
	conformance.Run(t, l, localSkip)
}

// TestConformancePostgres runs the table on the local engine with a
// PostgreSQL store (a schema of its own), skipping without one (failing
// under CI=true).
func TestConformancePostgres(t *testing.T) {
	dsn := os.Getenv("REIN_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("REIN_TEST_POSTGRES_DSN is not set under CI: .ci/run must start PostgreSQL")
		}
		t.Skip(`needs PostgreSQL: eval "$(bash .ci/postgres)" && go test ./internal/conformance -run Postgres`)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	schema := "rein_conformance_" + hex.EncodeToString(rnd[:])
	st, err := postgres.Open(context.Background(), dsn, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	l := &local{db: u.String()}
	t.Cleanup(l.close)
	conformance.Run(t, l, localSkip)
}

// local is the local engine (rein.Client) on the store at db, which every
// process of a case opens.
type local struct {
	db string
	c  *rein.Client
}

func (l *local) close() {
	if l.c != nil {
		_ = l.c.Close()
	}
}

// open opens the client of case c (its load options).
func (l *local) open(ctx context.Context, c *conformance.Case) error {
	l.close()
	cl, err := rein.Open(ctx, rein.Config{DB: l.db, Load: c.LoadOptions()})
	if err != nil {
		return err
	}
	l.c = cl
	return nil
}

func (l *local) Start(ctx context.Context, c *conformance.Case, id string) (*conformance.Observed, error) {
	if err := l.open(ctx, c); err != nil {
		return nil, err
	}
	p, err := l.c.Load(c.Dir)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	in, err := c.InputValue()
	if err != nil {
		return nil, err
	}
	if _, err := l.c.Start(ctx, p, in, &rein.RunOptions{RunID: id}); err != nil {
		return nil, err
	}
	return l.observe(ctx, id)
}

func (l *local) Decide(ctx context.Context, id string, d conformance.Decision) (*conformance.Observed, error) {
	dec := rein.Decision{Comment: d.Comment, By: "conformance"}
	switch d.Action {
	case "approve":
		dec.Status = store.ApprovalApproved
	case "reject":
		dec.Status = store.ApprovalRejected
	case "settle":
		dec.Status, dec.Output = store.ApprovalSettled, d.Output
	default:
		return nil, fmt.Errorf("decision %q: want approve, reject or settle", d.Action)
	}
	if _, err := l.c.Decide(ctx, id, d.Step, dec, &rein.DecideOptions{Resume: true}); err != nil {
		return nil, err
	}
	return l.observe(ctx, id)
}

// StartKilled starts the run in a process of its own (TestConformanceChild),
// kills it once inFlight holds, and resumes the run here once the dead
// process's lease ran out.
func (l *local) StartKilled(ctx context.Context, c *conformance.Case, id string, inFlight func() bool, release func()) (*conformance.Observed, error) {
	if err := l.open(ctx, c); err != nil {
		return nil, err
	}
	child := exec.Command(os.Args[0], "-test.run=^TestConformanceChild$", "-test.count=1", "-test.v")
	child.Env = append(os.Environ(), "REIN_CONFORMANCE_CHILD_DB="+l.db, "REIN_CONFORMANCE_CHILD_CASE="+c.Name, "REIN_CONFORMANCE_CHILD_RUN="+id)
	var out strings.Builder
	child.Stdout, child.Stderr = &out, &out
	if err := child.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = child.Wait(); close(exited) }()
	defer func() { _ = child.Process.Kill(); <-exited }()
	if err := poll(ctx, exited, inFlight); err != nil {
		return nil, fmt.Errorf("the calls never ran in the worker process: %w\n%s", err, out.String())
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		return nil, err
	}
	<-exited
	release()
	for {
		_, err := l.c.Resume(ctx, id, nil)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("resume after the kill: %w", err)
		}
		// the dead process's lease has not run out yet.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(childLease / 4):
		}
	}
	return l.observe(ctx, id)
}

// TestConformanceChild is the worker process local.StartKilled starts
// (and kills): it runs only when REIN_CONFORMANCE_CHILD_RUN is set.
func TestConformanceChild(t *testing.T) {
	id := os.Getenv("REIN_CONFORMANCE_CHILD_RUN")
	if id == "" {
		t.Skip("the worker process of a conformance case run with a kill")
	}
	cases, err := conformance.Cases()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.Name != os.Getenv("REIN_CONFORMANCE_CHILD_CASE") {
			continue
		}
		ctx := context.Background()
		cl, err := rein.Open(ctx, rein.Config{DB: os.Getenv("REIN_CONFORMANCE_CHILD_DB"), Load: c.LoadOptions(), LeaseTTL: childLease})
		if err != nil {
			t.Fatal(err)
		}
		p, err := cl.Load(c.Dir)
		if err != nil {
			t.Fatal(err)
		}
		in, err := c.InputValue()
		if err != nil {
			t.Fatal(err)
		}
		res, err := cl.Start(ctx, p, in, &rein.RunOptions{RunID: id})
		t.Fatalf("the run ended before its process was killed: %+v %v", res, err)
	}
	t.Fatalf("no case %q", os.Getenv("REIN_CONFORMANCE_CHILD_CASE"))
}

// observe is the run as its journal and step rows hold it (Client.Status).
func (l *local) observe(ctx context.Context, id string) (*conformance.Observed, error) {
	res, err := l.c.Status(ctx, id)
	if err != nil {
		return nil, err
	}
	o := &conformance.Observed{Status: string(res.Status), Steps: map[string]string{},
		Usage: &conformance.Usage{Iterations: res.Usage.Iterations, LLMCalls: res.Usage.LLMCalls, TokensIn: res.Usage.TokensIn, TokensOut: res.Usage.TokensOut}}
	if res.Error != nil {
		o.Class = string(res.Error.Class)
	}
	for sid, s := range res.Steps {
		o.Steps[sid] = string(s.Status)
	}
	for _, a := range res.Pending {
		o.Pending = append(o.Pending, a.StepID)
	}
	sort.Strings(o.Pending)
	return o, nil
}

// poll waits until cond holds; it gives up when ctx ends or the process
// whose exit closes exited ended.
func poll(ctx context.Context, exited <-chan struct{}, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return errors.New("the worker process ended")
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}
