// Command load is the HTTP load test of rein serve (docs/performance.md
// "HTTP load"): it starts rein's HTTP server serving W5 (the 5-step
// benchmark flow) in a second process on loopback, then runs -clients
// clients for -duration against it, each starting W5 runs and waiting for
// them to finish (POST /v1/runs?wait=), reading the run's page, the runs
// list and the approvals inbox, and following the run's event stream
// (SSE). It prints requests a second, p50 and p99 by route class, the
// error rate, the W5 runs started and finished a second, and the
// server's goroutines and memory before and after (from /metrics).
//
//	go run ./bench/load -clients 64 -duration 30s                 # SQLite in a temp folder
//	go run ./bench/load -db "$REIN_TEST_POSTGRES_DSN" -clients 64 # PostgreSQL
//
// It is bounded: -clients goroutines, each one request at a time, for
// -duration.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

// run parses args and runs the server (-serve) or the load test.
func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	var (
		so       serveOpts
		serveIt  = fs.Bool("serve", false, "run the server (the load test starts it as a child process)")
		clients  = fs.Int("clients", 64, "concurrent clients")
		duration = fs.Duration("duration", 30*time.Second, "how long the clients run")
		sseEvery = fs.Int("sse-every", 8, "every Nth iteration of a client follows its run's event stream")
	)
	fs.StringVar(&so.db, "db", "", "the store: a SQLite path or a postgres:// DSN (default: a SQLite file in a temp folder)")
	fs.StringVar(&so.addr, "addr", "127.0.0.1:0", "the server's address (loopback)")
	fs.StringVar(&so.pprof, "pprof", "", "serve net/http/pprof of the server at this address (e.g. 127.0.0.1:6060)")
	fs.IntVar(&so.workers, "workers", 64, "runs the server advances at once")
	fs.DurationVar(&so.poll, "poll", 10*time.Millisecond, "how often the server's waits (?wait=) and event streams look for what was committed")
	fs.StringVar(&so.dir, "dir", "", "the server's folder (flow, tokens); default: a temp folder")
	fs.StringVar(&so.ready, "ready", "", "the file the server writes its address and tokens to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *serveIt {
		if so.dir == "" || so.ready == "" || so.db == "" {
			return errors.New("-serve needs -dir, -ready and -db")
		}
		return serve(so)
	}
	if *clients < 1 || *clients > 4096 || *duration <= 0 || *duration > time.Hour || *sseEvery < 1 {
		return fmt.Errorf("-clients must be 1 to 4096, -duration up to 1h, -sse-every at least 1")
	}
	dir, err := os.MkdirTemp("", "rein-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if so.db == "" {
		so.db = filepath.Join(dir, "rein.db")
	}
	srv, err := startServer(so, dir)
	if err != nil {
		return err
	}
	defer srv.stop()
	rep, err := load(context.Background(), srv.target, *clients, *duration, *sseEvery)
	if err != nil {
		return err
	}
	rep.store = storeName(so.db)
	rep.print(out)
	return nil
}

// server is the server child process.
type server struct {
	cmd    *exec.Cmd
	target target
}

// startServer runs this program with -serve as a child process and waits
// for it to listen.
func startServer(so serveOpts, dir string) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ready := filepath.Join(dir, "ready")
	args := []string{"-serve", "-db", so.db, "-addr", so.addr, "-dir", dir, "-ready", ready, "-workers", fmt.Sprint(so.workers), "-poll", so.poll.String()}
	if so.pprof != "" {
		args = append(args, "-pprof", so.pprof)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd}
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, err := os.ReadFile(ready)
		if f := strings.Fields(string(b)); err == nil && len(f) == 3 && strings.HasSuffix(string(b), "\n") {
			s.target = target{base: "http://" + f[0], token: f[1], admin: f[2]}
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, errors.New("the server did not start within 60s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the server with SIGTERM, as a service manager would.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// childEnv marks the server child (a test binary runs serve on it).
const childEnv = "REIN_LOAD_CHILD"

func storeName(db string) string {
	if strings.HasPrefix(db, "postgres") {
		return "PostgreSQL"
	}
	return "SQLite"
}
