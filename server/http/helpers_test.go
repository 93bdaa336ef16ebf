package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein"
	reinhttp "github.com/reinhq/rein/server/http"
	"github.com/reinhq/rein/server/mcp"
	"github.com/reinhq/rein/trace"
)

// env is a server over a real SQLite store, served by httptest, with a
// worker advancing its runs.
type env struct {
	t      *testing.T
	c      *rein.Client
	srv    *reinhttp.Server
	ts     *httptest.Server
	tokens *reinhttp.Tokens
	db     string
}

type envOpts struct {
	tokens      bool
	deliveryDir string
	rate        float64
	dirs        []string
	mcp         bool
	// logRequests logs each request's method, path and when it ends.
	logRequests bool
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	t.Setenv("REIN_OUTBOX", t.TempDir())
	e := &env{t: t, db: filepath.Join(t.TempDir(), "rein.db")}
	m, d := reinhttp.NewMetrics(), reinhttp.NewDeltas()
	c, err := rein.Open(t.Context(), rein.Config{DB: e.db, Sink: trace.Multi(m, d)})
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	dirs := o.dirs
	if dirs == nil {
		dirs = []string{"../../examples/refund"}
	}
	opts := &reinhttp.Options{Dirs: dirs, Metrics: m, Deltas: d, Logf: t.Logf, Poll: 10 * time.Millisecond, DeliveryDir: o.deliveryDir}
	if o.mcp {
		ms, err := mcp.New(t.Context(), c, &mcp.Options{Dirs: dirs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ms.Close() })
		opts.MCP = ms.Handler()
	}
	if o.rate > 0 {
		opts.Rate, opts.Burst = 1e-9, int(o.rate)
	}
	if o.tokens {
		e.tokens = reinhttp.OpenTokens(filepath.Join(t.TempDir(), "tokens.json"))
		opts.Tokens = e.tokens
	}
	srv, err := reinhttp.New(t.Context(), c, opts)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	h := srv.Handler()
	if o.logRequests {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t.Logf("%s %s %s", time.Now().Format("15:04:05.000"), r.Method, r.URL)
			inner.ServeHTTP(w, r)
			t.Logf("%s %s %s done", time.Now().Format("15:04:05.000"), r.Method, r.URL)
		})
	}
	e.ts = httptest.NewServer(h)
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Work(wctx, &rein.WorkerOptions{Concurrency: 2, Poll: 10 * time.Millisecond, Started: srv.SetReady})
	}()
	t.Cleanup(func() {
		srv.Shutdown()
		e.ts.Close()
		stop()
		<-done
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// token creates a token and returns it.
func (e *env) token(name, tenant string, scopes ...string) string {
	e.t.Helper()
	secret, _, err := e.tokens.Create(name, tenant, scopes, time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return secret
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("answer %d is not JSON: %v\n%s", r.status, err, r.body)
	}
}

// problem decodes a problem answer, checking its content type.
func (r reply) problem(t *testing.T) reinhttp.Problem {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("answer %d: Content-Type %q, want application/problem+json\n%s", r.status, ct, r.body)
	}
	var p reinhttp.Problem
	r.json(t, &p)
	if p.Status != r.status || p.Class == "" || p.Message == "" {
		t.Errorf("problem %+v does not carry the status %d, a class and a message", p, r.status)
	}
	return p
}

// do sends a request with token (none when empty) and header pairs.
func (e *env) do(method, path, token string, body any, headers ...string) reply {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return reply{status: res.StatusCode, header: res.Header, body: b}
}

var bigRefund = map[string]any{"flow": "refund", "input": map[string]any{"order": "A-1042", "amount": 240, "reason": "arrived broken"}}
var smallRefund = map[string]any{"flow": "refund", "input": map[string]any{"order": "A-1042", "amount": 20, "reason": "late"}}

// start starts a run and waits for it to settle or wait.
func (e *env) start(token string, body any) reinhttp.Started {
	e.t.Helper()
	r := e.do("POST", "/v1/runs?wait=30s", token, body)
	if r.status != http.StatusOK {
		e.t.Fatalf("start: %d %s", r.status, r.body)
	}
	var s reinhttp.Started
	r.json(e.t, &s)
	return s
}
