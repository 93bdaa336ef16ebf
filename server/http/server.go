package http

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultRate         = 20 // requests per second per token
	DefaultBurst        = 40
	DefaultPoll         = 200 * time.Millisecond
	// MaxWait caps POST /v1/runs?wait=.
	MaxWait = 60 * time.Second
)

// Options configure a Server. Every field may be left zero.
type Options struct {
	// Dirs are the folders served (GET /v1/flows, POST /v1/runs): each a
	// flow folder, an agent folder (agent.yaml) or a folder of them.
	Dirs []string
	// Load loads one folder. Defaults to Client.Load.
	Load func(path string) (*project.Project, error)
	// Tokens admit requests. Nil: every request is the local user's, of
	// the empty tenant, with every scope — bind such a server to loopback
	// only.
	Tokens *Tokens
	// MCP, when set, is served at /mcp (server/mcp Handler) to tokens of
	// run scope: a token of one tenant has its calls scoped to that
	// tenant's runs (runs.TenantHeader), an admin token sees every run.
	MCP http.Handler
	// Metrics is served at /metrics to admin tokens; nil serves none.
	Metrics *Metrics
	// Deltas, when set, is the hub the Client's sink streams model text
	// to (NewDeltas): the event streams carry it (event: delta). Nil: the
	// streams carry the journal's events only.
	Deltas *Deltas
	// DeliveryDir is where the workflow tool writes deliveries
	// (<dir>/<run>/<file>), served as artifacts. Defaults to the
	// workflow tool's: the deliveries folder of the run's flow's folder.
	DeliveryDir string
	// MaxBodyBytes caps a request body. Defaults to DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Rate and Burst limit each token's requests. Default to
	// DefaultRate and DefaultBurst.
	Rate  rate.Limit
	Burst int
	// Poll is how often an event stream or a wait looks for what was
	// committed. Defaults to DefaultPoll. A wait (?wait=) on a run this
	// process advances is woken by Metrics, the Client's sink, when the
	// run settles or parks, without waiting for the next Poll.
	Poll time.Duration
	// Logf reports what the server does. Defaults to discarding.
	Logf func(format string, args ...any)
	// Now is the clock of token creation times. Defaults to time.Now.
	Now func() time.Time
}

// Server serves the API of a Client. Handler is its http.Handler.
type Server struct {
	c     *rein.Client
	o     Options
	flows *catalog
	mux   *http.ServeMux
	ready atomic.Bool

	limMu    sync.Mutex
	limiters map[string]*rate.Limiter

	// sess are the UI's logins; ui is the UI's handler (every path that
	// is not the API's).
	sess *sessions
	ui   http.Handler

	// done ends the event streams when the server shuts down.
	done     chan struct{}
	doneOnce sync.Once
}

// New loads the served folders and returns the Server of c. A folder that
// does not load is served with its problems (GET /v1/flows) and starts
// nothing. The caller closes the projects with Close.
func New(ctx context.Context, c *rein.Client, opts *Options) (*Server, error) {
	if c == nil || c.Runs() == nil {
		return nil, errors.New("http: the server needs a Client with a durable store")
	}
	s := &Server{c: c, limiters: map[string]*rate.Limiter{}, done: make(chan struct{}), sess: newSessions()}
	if opts != nil {
		s.o = *opts
	}
	if s.o.Load == nil {
		s.o.Load = c.Load
	}
	if s.o.MaxBodyBytes <= 0 {
		s.o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if s.o.Rate <= 0 {
		s.o.Rate = DefaultRate
	}
	if s.o.Burst <= 0 {
		s.o.Burst = DefaultBurst
	}
	if s.o.Poll <= 0 {
		s.o.Poll = DefaultPoll
	}
	if s.o.Logf == nil {
		s.o.Logf = func(string, ...any) {}
	}
	if s.o.Now == nil {
		s.o.Now = time.Now
	}
	cat, err := loadCatalog(ctx, s.o.Dirs, s.o.Load)
	if err != nil {
		return nil, err
	}
	s.flows = cat
	s.mux = http.NewServeMux()
	for _, rt := range routes {
		h := rt.handler(s)
		s.mux.Handle(rt.pattern(), s.guard(rt, h))
	}
	s.ui = s.uiHandler()
	return s, nil
}

// Close closes the served projects and ends the event streams.
func (s *Server) Close() error {
	s.Shutdown()
	return s.flows.close()
}

// Projects are the served folders that loaded, by flow or agent name: a
// program reads what their rein.yaml declares (its models' providers, for
// the spans it exports). The Server owns them: they are closed by Close.
func (s *Server) Projects() []*project.Project {
	out := make([]*project.Project, 0, len(s.flows.projects))
	for _, name := range slices.Sorted(maps.Keys(s.flows.projects)) {
		out = append(out, s.flows.projects[name])
	}
	return out
}

// Shutdown ends the event streams (an http.Server's Shutdown waits for
// them otherwise): call it before http.Server.Shutdown.
func (s *Server) Shutdown() { s.doneOnce.Do(func() { close(s.done) }) }

// SetReady marks the server ready (GET /readyz): the store is open and
// the runs in flight are being resumed (rein.WorkerOptions.Started).
func (s *Server) SetReady() { s.ready.Store(true) }

// Handler is the server's handler, with the security headers on every
// answer: the API's routes (/v1, /healthz, /readyz, /metrics, /mcp), and
// the web UI at every other path.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		h.Set("Cache-Control", "no-store")
		if !isAPI(r.URL.Path) {
			s.ui.ServeHTTP(w, r)
			return
		}
		if _, pattern := s.mux.Handler(r); pattern == "" {
			if allow := s.allowed(r); len(allow) > 0 {
				h.Set("Allow", strings.Join(allow, ", "))
				writeProblem(w, statusErr(http.StatusMethodNotAllowed, fault.Format, "%s %s: this route takes %s", r.Method, r.URL.Path, strings.Join(allow, ", ")))
				return
			}
			writeProblem(w, notFound(fmt.Sprintf("no route %s %s: see GET /v1/openapi.json", r.Method, r.URL.Path)))
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

// allowed are the methods the path of r is served with.
func (s *Server) allowed(r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, pattern := s.mux.Handler(r2); pattern != "" {
			out = append(out, m)
		}
	}
	return out
}

// caller is who makes a request: a token, or the local user of a server
// without tokens.
type caller struct {
	name   string
	tenant string
	token  *Token // nil for the local user
}

type callerKey struct{}

func callerOf(ctx context.Context) *caller {
	c, _ := ctx.Value(callerKey{}).(*caller)
	return c
}

// guard admits a request to rt: its token (401 without or with a bad
// one), its scope (403), its rate (429).
func (s *Server) guard(rt route, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rt.scope == "" {
			h.ServeHTTP(w, r)
			return
		}
		c, err := s.authenticate(r)
		if err != nil {
			if statusOf(err) == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="rein"`)
			}
			writeProblem(w, err)
			return
		}
		if c.token != nil && !c.token.Has(rt.scope) {
			writeProblem(w, statusErr(http.StatusForbidden, fault.Policy, "token %s (scopes %s) lacks the %s scope %s %s needs",
				c.name, strings.Join(c.token.Scopes, ","), rt.scope, r.Method, rt.path))
			return
		}
		if !s.limiter(c).Allow() {
			w.Header().Set("Retry-After", "1")
			writeProblem(w, statusErr(http.StatusTooManyRequests, fault.Transient, "token %s sends more than %g requests a second: slow down", c.name, float64(s.o.Rate)))
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

func (s *Server) authenticate(r *http.Request) (*caller, error) {
	if s.o.Tokens == nil {
		return &caller{name: "local"}, nil
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return nil, statusErr(http.StatusUnauthorized, fault.Policy, "no token: send Authorization: Bearer <token> (rein serve token create)")
	}
	secret, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || secret == "" {
		return nil, statusErr(http.StatusUnauthorized, fault.Policy, "the Authorization header is not Bearer <token>")
	}
	t, err := s.o.Tokens.Lookup(strings.TrimSpace(secret))
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, statusErr(http.StatusUnauthorized, fault.Policy, "the token is not known (revoked, or never created here)")
	}
	return &caller{name: t.Name, tenant: t.Tenant, token: t}, nil
}

func (s *Server) limiter(c *caller) *rate.Limiter {
	key := c.name
	if c.token != nil {
		key = c.token.ID
	}
	s.limMu.Lock()
	defer s.limMu.Unlock()
	l := s.limiters[key]
	if l == nil {
		l = rate.NewLimiter(s.o.Rate, s.o.Burst)
		s.limiters[key] = l
	}
	return l
}
