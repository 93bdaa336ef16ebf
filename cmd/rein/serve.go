package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/redact"
	reinhttp "github.com/reinhq/rein/server/http"
	"github.com/reinhq/rein/server/mcp"
	"github.com/reinhq/rein/trace"
)

// defaultTokens is where rein serve keeps its tokens' hashes when neither
// --tokens nor REIN_TOKENS says.
var defaultTokens = filepath.Join(".rein", "tokens.json")

func tokensPath(flag string) string {
	if flag != "" {
		return flag
	}
	if env := os.Getenv("REIN_TOKENS"); env != "" {
		return env
	}
	return defaultTokens
}

func newServeCmd(s *streams) *cobra.Command {
	var (
		l       loadFlags
		db      dbFlag
		addr    string
		workers int
		grace   time.Duration
		tokens  string
	)
	cmd := &cobra.Command{
		Use:   "serve DIR...",
		Short: "Serve flows and agents, their runs, approvals and effects over HTTP (a web UI at /, the API at /v1, /mcp, /metrics)",
		Long: `Serve the flows and agents of DIR (a flow or agent folder, or a folder of
them) over HTTP: start runs, list and show them, stream their events, decide
their approvals, cancel, retry, and read their effects, why, impact and
artifacts (docs/server.md lists the routes; GET /v1/openapi.json describes
them). The runs are kept in --db and advanced by --workers workers in this
process; the runs in flight there are resumed at start (GET /readyz answers
200 once they are). A web UI at / shows the runs (a run's graph live), the
approvals inbox and the effects, for a person logged in with a token.

Requests carry a bearer token of rein serve token create, of one tenant and
some scopes (read, run, approve, admin); a token sees only its tenant's runs.
Without any token, rein serve binds to loopback only and says so.

On SIGTERM (or SIGINT) it stops taking requests, ends the event streams,
gives the steps in flight --grace to finish, and exits: 0 after SIGTERM, 130
after SIGINT.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if workers <= 0 {
				return usageErr("--workers must be at least 1, not %d", workers)
			}
			if err := l.checkModelFlags(); err != nil {
				return err
			}
			return serve(cmd.Context(), s, &serveConfig{dirs: args, load: &l, db: &db, addr: addr, workers: workers, grace: grace, tokens: tokensPath(tokens)})
		},
	}
	l.register(cmd)
	db.register(cmd)
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:7420", "address to listen on (host:port); without tokens, loopback only")
	cmd.Flags().IntVar(&workers, "workers", 4, "most runs advanced at once")
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "on SIGTERM/SIGINT, how long steps in flight may finish before they are abandoned")
	cmd.Flags().StringVar(&tokens, "tokens", "", "file of the tokens' hashes (default: $REIN_TOKENS, else "+defaultTokens+")")
	cmd.AddCommand(newServeTokenCmd(s))
	return cmd
}

type serveConfig struct {
	dirs    []string
	load    *loadFlags
	db      *dbFlag
	addr    string
	workers int
	grace   time.Duration
	tokens  string
}

func serve(ctx context.Context, s *streams, sc *serveConfig) error {
	st, dsn, err := sc.db.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore(s, st)
	var mu sync.Mutex
	red := redact.Process().With(redact.Passwords(dsn)...)
	logf := func(format string, args ...any) {
		line := red.String(redact.DSN(fmt.Sprintf(format, args...)))
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(s.err, "%s rein serve: %s\n", time.Now().Format("15:04:05.000"), line)
	}
	o := sc.load.loadOptions()
	serveWorkflows(o, st) // agents' workflow tools
	metrics, deltas := reinhttp.NewMetrics(), reinhttp.NewDeltas()
	c, err := rein.Open(ctx, rein.Config{Store: st, Load: o, Sink: s.withTelemetry(trace.Multi(metrics, deltas))})
	if err != nil {
		return &exitError{code: exitRunFailed, err: err}
	}
	toks := reinhttp.OpenTokens(sc.tokens)
	list, err := toks.List()
	if err != nil {
		return usageErr("--tokens: %v", err)
	}
	addr := sc.addr
	if len(list) == 0 {
		toks = nil
		if addr, err = loopback(addr); err != nil {
			return usageErr("--addr %s: %v", sc.addr, err)
		}
		logf("no tokens in %s: every request is served, so only on loopback (%s); create one with rein serve token create", sc.tokens, addr)
	} else {
		logf("%d tokens in %s", len(list), sc.tokens)
	}
	var mcpHandler http.Handler
	if ms, err := mcp.New(ctx, c, &mcp.Options{Dirs: sc.dirs, Load: o, Version: readBuildInfo().short(), Log: s.err, LogPrefix: "rein serve /mcp"}); err != nil {
		logf("no /mcp: %v", err)
	} else {
		defer ms.Close()
		mcpHandler = ms.Handler()
	}
	srv, err := reinhttp.New(ctx, c, &reinhttp.Options{Dirs: sc.dirs, Tokens: toks, MCP: mcpHandler, Metrics: metrics, Deltas: deltas, Logf: logf})
	if err != nil {
		return usageErr("%v", err)
	}
	defer srv.Close()
	projects := srv.Projects
	s.served.Store(&projects) // the spans of their rein.yaml models name the providers
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErr("--addr %s: %v", addr, err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 90 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	logf("serving %s on http://%s (UI /, API /v1, /mcp, /metrics), %d workers", strings.Join(sc.dirs, " "), ln.Addr(), sc.workers)
	worked := make(chan error, 1)
	go func() {
		worked <- c.Work(ctx, &rein.WorkerOptions{Concurrency: sc.workers, Poll: 250 * time.Millisecond, Grace: sc.grace, Logf: logf, Started: func() {
			srv.SetReady()
			logf("ready: the runs in flight are resumed")
		}})
	}()
	select {
	case err := <-served:
		return &exitError{code: exitRunFailed, err: fmt.Errorf("serve: %w", err)}
	case <-ctx.Done():
	}
	logf("stopping: no new requests, the steps in flight get %s", sc.grace)
	srv.Shutdown()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sc.grace+5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		logf("requests still open at shutdown: %v", err)
	}
	if err := <-worked; err != nil {
		return &exitError{code: exitRunFailed, err: err}
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		logf("serve: %v", err)
	}
	logf("stopped")
	if in := interruptOf(ctx); in != nil && in.sig == syscall.SIGTERM {
		return nil // asked to stop, and stopped cleanly
	}
	return &exitError{code: exitInterrupted}
}

// loopback is addr on a loopback host: a loopback or empty host becomes
// 127.0.0.1 (same port), another host is refused.
func loopback(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if host == "localhost" {
		return net.JoinHostPort("127.0.0.1", port), nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return addr, nil
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		return net.JoinHostPort("127.0.0.1", port), nil
	}
	return "", fmt.Errorf("without tokens rein serve listens on loopback only, not %s: create a token (rein serve token create) or listen on 127.0.0.1", host)
}

func newServeTokenCmd(s *streams) *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke the bearer tokens of rein serve",
		Long: `Tokens admit requests to rein serve. Each belongs to one tenant (it sees and
touches only that tenant's runs, approvals, artifacts and events) and holds
scopes: read (GET), run (start, cancel, retry, /mcp for its tenant's runs;
and read), approve (decide, remediate; and read), admin (everything, /metrics,
and every tenant's runs at /mcp). Only a token's
sha256 is stored, in --tokens; create prints the token once.`,
	}
	cmd.PersistentFlags().StringVar(&path, "tokens", "", "file of the tokens' hashes (default: $REIN_TOKENS, else "+defaultTokens+")")
	var tenant, name, scopes string
	create := &cobra.Command{
		Use:   "create --tenant T --scopes read,run,approve,admin --name NAME",
		Short: "Create a token and print it once",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if tenant == "" || name == "" || scopes == "" {
				return usageErr("give --tenant, --name and --scopes (read, run, approve, admin)")
			}
			secret, t, err := reinhttp.OpenTokens(tokensPath(path)).Create(name, tenant, strings.Split(scopes, ","), time.Now())
			if err != nil {
				return usageErr("%v", err)
			}
			fmt.Fprintln(s.rawOut, secret)
			fmt.Fprintf(s.err, "token %s (id %s) of tenant %s, scopes %s: shown once, stored as its sha256 in %s\n",
				t.Name, t.ID, t.Tenant, strings.Join(t.Scopes, ","), tokensPath(path))
			return nil
		},
	}
	create.Flags().StringVar(&tenant, "tenant", "", "the tenant whose runs the token sees")
	create.Flags().StringVar(&name, "name", "", "who holds it: recorded as the author of its decisions")
	create.Flags().StringVar(&scopes, "scopes", "", "comma-separated: read, run, approve, admin")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the tokens (never the tokens themselves)",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			all, err := reinhttp.OpenTokens(tokensPath(path)).List()
			if err != nil {
				return usageErr("%v", err)
			}
			w := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tNAME\tTENANT\tSCOPES\tCREATED")
			for _, t := range all {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Tenant, strings.Join(t.Scopes, ","), t.CreatedAt.Local().Format(time.DateTime))
			}
			return w.Flush()
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke NAME|ID",
		Short: "Revoke a token: its next request is refused, also by a running server",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			t, err := reinhttp.OpenTokens(tokensPath(path)).Revoke(args[0])
			if err != nil {
				return usageErr("%v", err)
			}
			fmt.Fprintf(s.out, "revoked token %s (id %s) of tenant %s\n", t.Name, t.ID, t.Tenant)
			return nil
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}
