package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // the profile of the server under load, on -pprof only
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/project"
	reinhttp "github.com/reinhq/rein/server/http"
	"github.com/reinhq/rein/tool"

	_ "github.com/reinhq/rein/store/postgres" // postgres:// DSNs
	_ "github.com/reinhq/rein/store/sqlite"   // file paths
)

// w5Flow is the W5 workload of the engine's benchmarks
// (internal/engine/bench_test.go): a linear flow of 5 pure Go tools, step
// 4 behind a when that holds, ~5-field JSON objects between steps.
const w5Flow = `name: w5
steps:
  - {id: s1, tool: enrich, args: {id: "{input.id}", name: "{input.name}", score: "{input.score}", tags: "{input.tags}", ok: true}}
  - {id: s2, tool: enrich, args: "{s1}"}
  - {id: s3, tool: enrich, args: "{s2}"}
  - {id: s4, tool: enrich, args: "{s3}", when: "s3.score > 10"}
  - {id: s5, tool: enrich, args: "{s4}"}
`

// enrich is W5's tool.
func enrich(_ context.Context, args any) (any, error) {
	in, ok := args.(map[string]any)
	if !ok {
		return nil, errors.New("enrich: args are not an object")
	}
	score, _ := in["score"].(float64)
	return map[string]any{"id": in["id"], "name": in["name"], "score": score + 1, "tags": in["tags"], "ok": true}, nil
}

// serveOpts are the server's flags.
type serveOpts struct {
	db, addr, pprof, dir string
	workers              int
	poll                 time.Duration // the server's Options.Poll: how often a wait and a stream look
	ready                string        // a file the server writes its address and tokens to
}

// serve runs rein's HTTP server over db, serving W5 with its Go tool, a
// worker of o.workers, no rate limit, until SIGTERM or SIGINT. It writes
// "ADDR RUN-TOKEN ADMIN-TOKEN" to o.ready once it listens.
func serve(o serveOpts) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := os.MkdirAll(filepath.Join(o.dir, "w5"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.dir, "w5", "flow.yaml"), []byte(w5Flow), 0o644); err != nil {
		return err
	}
	tl := tool.Func(tool.Spec{Name: "enrich", Effect: tool.EffectNone}, enrich)
	m := reinhttp.NewMetrics()
	c, err := rein.Open(ctx, rein.Config{DB: o.db, Sink: m, Load: &project.LoadOptions{Tools: []tool.Tool{tl}}})
	if err != nil {
		return err
	}
	defer c.Close()
	tokens := reinhttp.OpenTokens(filepath.Join(o.dir, "tokens.json"))
	runTok, _, err := tokens.Create("load", "bench", []string{"run", "approve"}, time.Now())
	if err != nil {
		return err
	}
	adminTok, _, err := tokens.Create("ops", "bench", []string{"admin"}, time.Now())
	if err != nil {
		return err
	}
	srv, err := reinhttp.New(ctx, c, &reinhttp.Options{Dirs: []string{filepath.Join(o.dir, "w5")}, Tokens: tokens, Metrics: m,
		Rate: 1e9, Burst: 1 << 30, Poll: o.poll})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	if o.pprof != "" {
		go func() { _ = http.ListenAndServe(o.pprof, nil) }() // DefaultServeMux: net/http/pprof
	}
	done := make(chan error, 1)
	go func() {
		done <- c.Work(ctx, &rein.WorkerOptions{Concurrency: o.workers, Poll: 2 * time.Millisecond, Started: srv.SetReady})
	}()
	if err := os.WriteFile(o.ready, fmt.Appendf(nil, "%s %s %s\n", ln.Addr(), runTok, adminTok), 0o600); err != nil {
		return err
	}
	<-ctx.Done()
	srv.Shutdown()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
