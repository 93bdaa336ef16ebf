package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// litestreamVersion is the litestream release the replication test builds
// from its Go module (through the module proxy, with cgo).
const litestreamVersion = "v0.5.18"

// litestreamBinary returns $REIN_LITESTREAM, or else builds the litestream
// CLI once per version into the user cache directory and returns its path. Where it cannot be built (no Go
// proxy, no C compiler) the test is skipped with the reason, except under
// CI, where that is a failure.
func litestreamBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("REIN_LITESTREAM"); bin != "" {
		return bin // built by .ci/run
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "rein-test", "litestream-"+litestreamVersion)
	bin := filepath.Join(dir, "litestream")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/benbjohnson/litestream/cmd/litestream@"+litestreamVersion)
	cmd.Dir = dir // outside rein's module: go install pkg@version ignores it anyway
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod", "CGO_ENABLED=1", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		msg := fmt.Sprintf("cannot build litestream %s (it needs the Go module proxy and a C compiler for cgo): %v\n%s", litestreamVersion, err, out)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// The real litestream replicates a store opened with CheckpointExternal
// while runs commit from several goroutines, checkpointing the WAL itself
// (thresholds set low, so its checkpoints run during the writes, and the
// test checks that one did); a restore of the replica passes litestream's full
// integrity check and reads back every committed run equal: run, steps,
// events and call records. (That rein itself never checkpoints such a
// store is TestCheckpointExternal's: litestream's log cannot tell, as it
// blames "another process" for its own checkpoints that a commit raced.)
//
// It builds litestream on first use (minutes); it runs under CI, or with
// REIN_TEST_LITESTREAM=1, and is skipped otherwise and under -short.
func TestLitestreamReplicatesAndRestores(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the litestream replication test builds litestream")
	}
	if os.Getenv("CI") == "" && os.Getenv("REIN_TEST_LITESTREAM") == "" {
		t.Skip("set REIN_TEST_LITESTREAM=1 (CI sets CI=true) to build the real litestream and replicate a store with it")
	}
	t.Parallel()
	bin := litestreamBinary(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "rein.db")
	replica := filepath.Join(dir, "replica")
	s := openFile(t, path, &Options{Checkpoint: CheckpointExternal})

	cfg := filepath.Join(dir, "litestream.yml")
	// Debug logging: the log then shows each checkpoint and each sync's
	// reason, for the test below and for a failure's message.
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `logging:
  level: debug
dbs:
  - path: %s
    monitor-interval: 50ms
    checkpoint-interval: 200ms
    min-checkpoint-page-count: 64
    truncate-page-n: 512
    replica:
      type: file
      path: %s
      sync-interval: 100ms
`, path, replica), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	rep := exec.Command(bin, "replicate", "-config", cfg)
	rep.Stdout, rep.Stderr = &logs, &logs
	if err := rep.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- rep.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		// SIGINT: litestream syncs the WAL and its replica a last time
		// before it exits.
		_ = rep.Process.Signal(syscall.SIGINT)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("litestream replicate: %v\n%s", err, logs.tail())
			}
		case <-time.After(2 * time.Minute):
			_ = rep.Process.Kill()
			<-exited //nolint:errcheck // killed: its exit error is the kill
			t.Fatalf("litestream replicate did not stop within 2 minutes\n%s", logs.tail())
		}
	}
	defer stop()
	// litestream is replicating once the replica holds a level-0 file.
	for deadline := time.Now().Add(time.Minute); ; {
		if m, _ := filepath.Glob(filepath.Join(replica, "ltx", "0", "*.ltx")); len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("litestream wrote nothing to the replica within a minute\n%s", logs.tail())
		}
		select {
		case err := <-exited:
			t.Fatalf("litestream replicate exited: %v\n%s", err, logs.tail())
		case <-time.After(50 * time.Millisecond):
		}
	}

	const writers, runsEach, steps = 8, 25, 40
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		ids []string
	)
	for g := range writers {
		wg.Go(func() {
			for r := range runsEach {
				id := fmt.Sprintf("run-%d-%d", g, r)
				if err := commitReplicatedRun(t.Context(), s, id, steps); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Wait until a restore holds every run settled, then stop litestream
	// (its last sync finds nothing left to copy) and restore once more.
	restore := func(n int) string {
		out := filepath.Join(dir, fmt.Sprintf("restored-%d.db", n))
		restore := exec.Command(bin, "restore", "-config", cfg, "-integrity-check", "full", "-o", out, path)
		if msg, err := restore.CombinedOutput(); err != nil {
			t.Fatalf("litestream restore: %v\n%s", err, msg)
		}
		return out
	}
	for n, deadline := 0, time.Now().Add(2*time.Minute); ; n++ {
		settled := countSettled(t, restore(n))
		if settled == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes a restore holds %d of the %d runs settled\n%s", settled, len(ids), logs.tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	r := openFile(t, restore(-1), nil)
	for _, id := range ids {
		compareRuns(t, s, r, id)
	}
	if !bytes.Contains(logs.bytes(), []byte("msg=checkpoint ")) {
		t.Errorf("litestream never checkpointed the WAL: the test no longer exercises its checkpoints\n%s", logs.tail())
	}
	if n, _ := filepath.Glob(filepath.Join(replica, "ltx", "*", "*.ltx")); len(n) < 2 {
		t.Errorf("the replica holds %d LTX files: litestream replicated nothing while runs committed\n%s", len(n), logs.tail())
	}
}

// countSettled counts the succeeded runs in the database at path.
func countSettled(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM runs WHERE status = 'succeeded'`).Scan(&n); err != nil {
		t.Fatalf("restored database %s: %v", path, err)
	}
	return n
}

// commitReplicatedRun commits a run of steps transitions, each settling a
// step with an event pair and a call record, the last one finishing it.
func commitReplicatedRun(ctx context.Context, s *Store, id string, steps int) error {
	t := &store.Transition{RunID: id, Create: &store.CreateRunParams{ID: id, Flow: "replicated", Input: json.RawMessage(`{"n":1}`)}}
	for k := 1; k <= steps; k++ {
		now := time.Now()
		sid := fmt.Sprint("s", k)
		out := fmt.Appendf(nil, `{"run":%q,"step":%d}`, id, k)
		t.Events = []*trace.Event{
			{Seq: int64(3*k - 2), Time: now, Kind: trace.StepStarted, RunID: id, Flow: "replicated", StepID: sid, StepType: "tool"},
			{Seq: int64(3*k - 1), Time: now, Kind: trace.CallRecorded, RunID: id, StepID: sid, Call: &store.Call{StepID: sid, Key: sid + "/call",
				Item: -1, Attempt: 1, Kind: store.CallTool, Name: "echo", Status: store.CallSucceeded, Output: out, StartedAt: now, Duration: time.Millisecond}},
			{Seq: int64(3 * k), Time: now, Kind: trace.StepSettled, RunID: id, Flow: "replicated", StepID: sid, StepType: "tool",
				Attempt: 1, Status: "succeeded", DurationMS: 1, Preview: string(out)},
		}
		t.Steps = []*store.Step{{StepID: sid, Type: "tool", Status: trace.StepSucceeded, Attempt: 1, Output: out, StartedAt: now, SettledAt: now}}
		if k == steps {
			t.Run = &store.RunUpdate{Status: trace.RunSucceeded, SettledAt: now}
		}
		if err := s.Commit(ctx, t); err != nil {
			return fmt.Errorf("commit step %d of %s: %w", k, id, err)
		}
		t.Create = nil
	}
	return nil
}

// compareRuns reports where run id reads differently in b than in a.
func compareRuns(t *testing.T, a, b *Store, id string) {
	t.Helper()
	ctx := t.Context()
	for _, read := range []struct {
		what string
		get  func(*Store) (any, error)
	}{
		{"run", func(s *Store) (any, error) { return s.GetRun(ctx, id) }},
		{"steps", func(s *Store) (any, error) { return s.Steps(ctx, id) }},
		{"events", func(s *Store) (any, error) { return s.Events(ctx, id, 0, 0) }},
		{"calls", func(s *Store) (any, error) { return s.Calls(ctx, id, "") }},
	} {
		want, err := read.get(a)
		if err != nil {
			t.Fatalf("%s of %s in the replicated store: %v", read.what, id, err)
		}
		got, err := read.get(b)
		if err != nil {
			t.Errorf("%s of %s in the restored store: %v", read.what, id, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			wj, _ := json.Marshal(want)
			gj, _ := json.Marshal(got)
			t.Errorf("%s of %s: restored\n%s\nwant\n%s", read.what, id, gj, wj)
		}
	}
}

// syncBuffer is the litestream process's log: written by the os/exec
// copying goroutines while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// tail is the log's last lines, for a failure message (the debug log of a
// whole test is megabytes).
func (b *syncBuffer) tail() string {
	lines := bytes.Split(bytes.TrimRight(b.bytes(), "\n"), []byte("\n"))
	return string(bytes.Join(lines[max(0, len(lines)-40):], []byte("\n")))
}
