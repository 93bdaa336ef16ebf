package rein

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/wire"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// Config configures a Client. Every field may be left zero.
type Config struct {
	// Store keeps the client's runs. The Client does not close it.
	// Defaults to the store DB names.
	Store store.Store
	// DB is the URL of the store to open when Store is nil (store.Open:
	// a SQLite file, ":memory:", postgres://…; the driver's package must
	// be imported). Close closes it. Both empty: runs are kept in memory
	// only — they cannot wait for a person, be resumed or listed.
	DB string
	// Load says how projects are loaded (Load) and rebuilt from the flow
	// a run pinned (Resume, Decide, Work): the Go Tools and Models the
	// program gives, Model, Script, Record/Replay, TrustedToolsOnly,
	// Workflow. Defaults to what each folder (or run) says.
	Load *project.LoadOptions
	// Sink receives the events of every run the client starts or
	// resumes. Defaults to none.
	Sink trace.Sink
	// Gate decides every tool call of the client's runs, before the
	// rules of each project's rein.yaml and flow. Defaults to those rules
	// alone.
	Gate safety.Gate
	// Owner names this client in run leases. Defaults to host/pid/random.
	Owner string
	// LeaseTTL is how long a run's lease lasts without a heartbeat.
	// Defaults to DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Redactor hides secrets in what the client's runs record and in the
	// decisions it records, besides what each project hides
	// (project.Project.Redactor: the environment's secrets, its
	// rein.yaml's and LoadOptions.Redactor's). Defaults to none besides
	// those.
	Redactor *redact.Redactor
}

// Client runs flows and agents and operates on their durable runs: start,
// enqueue, resume, decide, cancel, remediate, prune, and work as a worker.
// It is the one implementation of these operations: the rein CLI, the HTTP
// API and the MCP server only parse their requests and format what it
// returns. Its errors are *Error values with a class and a Hint, and say
// nothing about any one surface's flags or commands. Read views (a run,
// the list, why, effects, impact) are package runs' (Reader). A Client is
// safe for concurrent use.
type Client struct {
	st     store.Store
	owned  bool // opened from Config.DB: Close closes it
	load   project.LoadOptions
	cfg    engine.Config
	reader *runs.Reader // nil for a client without a durable store

	// busy holds the runs one of the client's operations is advancing,
	// each with the channel closed when it lets go: its operations share
	// one lease owner, so the lease alone would let two of them advance
	// one run at once.
	busyMu sync.Mutex
	busy   map[string]chan struct{}
}

// Open returns a Client of cfg, opening Config.DB when Config.Store is
// nil. On a durable store it first stops what exec tools of dead rein
// processes of this machine left running (engine.StopLeftovers: a tool's
// children still in its process group), so that no rein command leaves
// them to run on; that is best effort, and a store it cannot read there
// fails the operation that needs it, not Open.
func Open(ctx context.Context, cfg Config) (*Client, error) {
	c := &Client{st: cfg.Store}
	if c.st == nil && cfg.DB != "" {
		st, err := store.Open(ctx, cfg.DB)
		if err != nil {
			return nil, err
		}
		c.st, c.owned = st, true
	}
	if c.st == nil {
		c.st = store.Ephemeral
	}
	if cfg.Load != nil {
		c.load = *cfg.Load
	}
	if c.load.Cache == nil {
		c.load.Cache = project.NewCache(0)
	}
	c.cfg = engine.Config{Store: c.st, Sink: cfg.Sink, Gate: cfg.Gate, Owner: cfg.Owner, LeaseTTL: cfg.LeaseTTL, Redactor: cfg.Redactor}
	if c.cfg.Owner == "" {
		c.cfg.Owner = engine.NewOwner()
	}
	if !store.IsEphemeral(c.st) {
		_, _ = engine.StopLeftovers(ctx, c.st)
		r, err := runs.New(c.st, &runs.Options{Load: &c.load, Gate: cfg.Gate})
		if err != nil {
			return nil, err
		}
		c.reader = r
	}
	return c, nil
}

// Close closes the store the Client opened (Config.DB); a Config.Store is
// the caller's to close.
func (c *Client) Close() error {
	if c.owned {
		return c.st.Close()
	}
	return nil
}

// Store returns the store the client keeps runs in (store.Ephemeral when
// it keeps none).
func (c *Client) Store() store.Store { return c.st }

// Runs returns the read views of the client's runs, or nil when the client
// keeps its runs in memory only.
func (c *Client) Runs() *runs.Reader { return c.reader }

// LoadOptions returns a copy of the options the client loads projects with
// (Config.Load, with the client's cache of parsed pinned flows), for a
// surface that loads a run's pinned project itself (project.LoadPinned).
func (c *Client) LoadOptions() *project.LoadOptions {
	o := c.load
	return &o
}

// Owner is the name the client holds run leases under.
func (c *Client) Owner() string { return c.cfg.Owner }

// Load reads the flow folder (or flow file, or agent folder holding
// agent.yaml) at path with the client's load options (Config.Load), and
// validates everything: project.Load, or project.LoadAgent for an agent
// folder. A *flow.Error lists every problem; other errors name the file
// that failed. The caller closes the project.
func (c *Client) Load(path string) (*project.Project, error) {
	o := c.load
	if project.IsAgentDir(path) {
		return project.LoadAgent(path, &o)
	}
	return project.Load(path, &o)
}

// engine returns the engine of a run of p on the client's store, with
// sinks added to Config.Sink.
func (c *Client) engine(p *project.Project, sinks ...trace.Sink) *engine.Engine {
	cfg := c.cfg
	if len(sinks) > 0 {
		cfg.Sink = trace.Multi(nonNil(append([]trace.Sink{cfg.Sink}, sinks...)...)...)
	}
	return wire.Engine(p, cfg)
}

func nonNil(sinks ...trace.Sink) []trace.Sink {
	out := sinks[:0]
	for _, s := range sinks {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// holdWait is how long an operation waits for another operation of the
// same Client to let go of a run: long enough for one that has just
// parked or settled it to return, far shorter than one that works on.
const holdWait = 2 * time.Second

// hold marks run id as advanced by one of c's operations until release is
// called. While another operation of c holds the run, hold waits for it to
// let go (a run just parked for a person is let go within milliseconds)
// for up to holdWait or until ctx ends; then it is a conflict
// (HintHeldByAnotherProcess, naming c's owner), as the run's lease makes
// it for another process.
func (c *Client) hold(ctx context.Context, id string) (release func(), err error) {
	timer := time.NewTimer(holdWait)
	defer timer.Stop()
	for {
		c.busyMu.Lock()
		held, busy := c.busy[id]
		if !busy {
			if c.busy == nil {
				c.busy = map[string]chan struct{}{}
			}
			done := make(chan struct{})
			c.busy[id] = done
			c.busyMu.Unlock()
			return func() {
				c.busyMu.Lock()
				delete(c.busy, id)
				c.busyMu.Unlock()
				close(done)
			}, nil
		}
		c.busyMu.Unlock()
		select {
		case <-held:
			continue
		case <-ctx.Done():
		case <-timer.C:
		}
		return nil, fault.Hinted(fault.Conflict, fault.Hint{Code: fault.HintHeldByAnotherProcess, RunID: id, Owner: c.cfg.Owner},
			fmt.Errorf("run %s is being advanced by this process (%s) already: wait for it to finish or to wait: %w", id, c.cfg.Owner, store.ErrConflict))
	}
}

// durable fails when the client keeps no store: op needs one.
func (c *Client) durable(op string) error {
	if c.reader == nil {
		return fault.Errorf(fault.Business, "rein: %s needs a durable store (Config.Store or Config.DB)", op)
	}
	return nil
}

var errNoProject = errors.New("rein: no project (Client.Load)")

func checkProject(p *project.Project) error {
	if p == nil || p.Flow == nil {
		return errNoProject
	}
	return nil
}
