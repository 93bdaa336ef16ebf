//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// rein serve as a process: a run recorded before it started (rein run
// --detach) is advanced once it is ready, a run started over HTTP waits
// for its approval, SIGTERM makes it stop serving and exit 0, and the
// spans of the runs it advanced reach the OTLP endpoint it was given.
func TestServeProcessResumesAndStopsOnSIGTERM(t *testing.T) {
	bin, err := reinBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	flow := filepath.Join(dir, "refund")
	if err := os.CopyFS(flow, os.DirFS("../../examples/refund")); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "rein.db")
	col, spans := spanCollector(t)
	env := append(os.Environ(), "REIN_OUTBOX="+filepath.Join(dir, "outbox"), "REIN_DB="+db, "OTEL_EXPORTER_OTLP_ENDPOINT="+col)
	detach := exec.Command(bin, "run", flow, "--detach", "--input-json", `{"order":"A-1042","amount":20,"reason":"late"}`, "--db", db)
	detach.Env = env
	out, err := detach.CombinedOutput()
	if err != nil {
		t.Fatalf("rein run --detach: %v\n%s", err, out)
	}
	queued := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f-]{27}`).FindString(string(out))
	if queued == "" {
		t.Fatalf("no run id in %s", out)
	}

	cmd := exec.Command(bin, "serve", flow, "--db", db, "--addr", "127.0.0.1:0", "--tokens", filepath.Join(dir, "tokens.json"), "--workers", "2")
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var (
		mu    sync.Mutex
		log   strings.Builder
		addr  = make(chan string, 1)
		ready = make(chan struct{})
		ended = make(chan struct{})
	)
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			log.WriteString(line + "\n")
			mu.Unlock()
			if m := regexp.MustCompile(`on http://(127\.0\.0\.1:\d+)`).FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
			if strings.Contains(line, "ready:") {
				once.Do(func() { close(ready) })
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	logText := func() string { mu.Lock(); defer mu.Unlock(); return log.String() }
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case <-time.After(60 * time.Second):
		t.Fatalf("rein serve did not listen:\n%s", logText())
	}
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatalf("rein serve was not ready:\n%s", logText())
	}
	if !strings.Contains(logText(), "only on loopback") {
		t.Errorf("without tokens the log does not say it serves loopback only:\n%s", logText())
	}
	get := func(path string, v any) int {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if v != nil {
			_ = json.NewDecoder(res.Body).Decode(v)
		}
		return res.StatusCode
	}
	if code := get("/readyz", nil); code != 200 {
		t.Errorf("/readyz after ready: %d", code)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var v struct {
			Run struct{ Status string } `json:"run"`
		}
		get("/v1/runs/"+queued, &v)
		if v.Run.Status == "succeeded" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queued run is %q, want succeeded\n%s", v.Run.Status, logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
	res, err := http.Post(base+"/v1/runs?wait=30s", "application/json",
		strings.NewReader(`{"flow":"refund","input":{"order":"A-1042","amount":240,"reason":"broken"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var started struct{ RunID, Status string }
	_ = json.NewDecoder(res.Body).Decode(&struct {
		RunID  *string `json:"run_id"`
		Status *string `json:"status"`
	}{&started.RunID, &started.Status})
	res.Body.Close()
	if started.Status != "waiting" {
		t.Fatalf("a refund of 240: %d %+v", res.StatusCode, started)
	}

	t.Logf("%s SIGTERM", time.Now().Format("15:04:05.000"))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { <-ended; done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) || err != nil {
			t.Fatalf("rein serve after SIGTERM: %v\n%s", err, logText())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("rein serve did not exit after SIGTERM\n%s", logText())
	}
	t.Log(logText())
	if !strings.Contains(logText(), "stopped") {
		t.Errorf("no stop in the log:\n%s", logText())
	}
	if got := spans(); !slices.ContainsFunc(slices.Collect(maps.Keys(got)), func(n string) bool { return strings.HasPrefix(n, "invoke_workflow ") }) {
		t.Errorf("rein serve exported no invoke_workflow span; spans: %v", got)
	}
}
