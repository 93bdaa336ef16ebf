package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// pinFixture is a store with one run, and a second connection to its file
// that stands for another process.
type pinFixture struct {
	t     *testing.T
	path  string
	s     *Store
	other *sql.DB
	w     *w5
}

func newPinFixture(t *testing.T) *pinFixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rein.db")
	s := openFile(t, path, nil)
	r, _, err := s.CreateRun(t.Context(), &store.CreateRunParams{ID: "run", Flow: "w5"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	other.SetMaxOpenConns(1)
	t.Cleanup(func() { other.Close() })
	if _, err := other.Exec("CREATE TABLE IF NOT EXISTS other (x)"); err != nil {
		t.Fatal(err)
	}
	return &pinFixture{t: t, path: path, s: s, other: other, w: newW5("run", r.Version)}
}

func (f *pinFixture) commit() {
	f.t.Helper()
	if err := f.s.Commit(f.t.Context(), f.w.next()); err != nil {
		f.t.Fatal(err)
	}
}

// expectPinned commits until a commit is seen to keep its read
// transaction (a few tries: on a stalled machine pinIdle may pass between
// a commit and the look).
func (f *pinFixture) expectPinned(what string) {
	f.t.Helper()
	for range 5 {
		f.commit()
		if f.truncate() {
			return
		}
	}
	f.t.Fatalf("%s: no commit kept its read transaction: the writer does not pin", what)
}

// truncate runs a TRUNCATE checkpoint on the other connection without
// waiting: busy when a reader (the writer's pin) holds the WAL.
func (f *pinFixture) truncate() (busy bool) {
	f.t.Helper()
	var b, logFrames, copied int
	if err := f.other.QueryRow("PRAGMA wal_checkpoint(TRUNCATE)").Scan(&b, &logFrames, &copied); err != nil {
		f.t.Fatal(err)
	}
	return b != 0
}

// TestPinWaitsForAnotherWriter: while the writer is pinned, another
// connection takes the write lock and holds it. SQLite does not wait for a
// lock inside a read transaction, so the pinned BEGIN fails at once; the
// writer must let the pin go and wait for the lock like an unpinned
// writer, then see what the other connection wrote.
func TestPinWaitsForAnotherWriter(t *testing.T) {
	t.Parallel()
	f := newPinFixture(t)
	f.commit()
	ctx := t.Context()
	conn, err := f.other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	// the other writer changes the run, as another process's commit would.
	if _, err := conn.ExecContext(ctx, `UPDATE runs SET error = '{"message":"from the other connection"}' WHERE id = 'run'`); err != nil {
		t.Fatal(err)
	}
	const hold = 300 * time.Millisecond
	released := make(chan error, 1)
	go func() {
		time.Sleep(hold)
		_, err := conn.ExecContext(ctx, "COMMIT")
		released <- err
	}()
	t0 := time.Now()
	f.commit() // would fail with "database is locked" if the pinned BEGIN were not retried
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < hold/2 {
		t.Errorf("the commit took %v: it did not wait for the other writer's lock", d)
	}
	r, err := f.s.GetRun(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"message":"from the other connection"}`; string(r.Error) != want {
		t.Errorf("run error %s, want the other connection's %s", r.Error, want)
	}
}

// TestPinSeesAnotherWritersCommit: another store on the file commits a
// transition between two of this store's commits. The pinned snapshot is
// then stale, and the writer must notice (and forget the run's head) rather
// than check the next version against what it remembers.
func TestPinSeesAnotherWritersCommit(t *testing.T) {
	t.Parallel()
	f := newPinFixture(t)
	ctx := t.Context()
	f.commit()
	b := openFile(t, f.path, nil)
	r, err := b.GetRun(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	seq := r.LastSeq + 1
	if err := b.Commit(ctx, &store.Transition{RunID: "run", Version: r.Version,
		Events: []*trace.Event{{Seq: seq, Kind: trace.StepStarted, RunID: "run", StepID: "by-b"}}}); err != nil {
		t.Fatal(err)
	}
	// f's W5 still holds the version b committed on: a conflict.
	err = f.s.Commit(ctx, f.w.next())
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("commit on a version another store moved: %v, want ErrConflict", err)
	}
	if err := f.s.Commit(ctx, &store.Transition{RunID: "run", Version: r.Version + 1,
		Events: []*trace.Event{{Seq: seq + 1, Kind: trace.StepStarted, RunID: "run", StepID: "by-a"}}}); err != nil {
		t.Fatalf("commit on the version another store wrote: %v", err)
	}
	evs, err := b.Events(ctx, "run", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.StepID != "by-a" || last.Seq != seq+1 {
		t.Errorf("last event %+v, want by-a at seq %d", last, seq+1)
	}
}

// TestPinLetGoWhenIdle: a writer that commits holds its read transaction
// (another connection's TRUNCATE checkpoint is held back by it), and lets
// it go once it has been idle for pinIdle, so an idle process holds no
// other's checkpoint back.
func TestPinLetGoWhenIdle(t *testing.T) {
	// not parallel: pinIdle is read by every Open.
	defer func(d time.Duration) { pinIdle = d }(pinIdle)
	pinIdle = 200 * time.Millisecond
	f := newPinFixture(t)
	f.expectPinned("at first")
	deadline := time.Now().Add(10 * time.Second)
	for f.truncate() {
		if time.Now().After(deadline) {
			t.Fatalf("the writer still holds its read transaction 10 s after its last commit (pinIdle %v)", pinIdle)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if fi, err := os.Stat(f.path + "-wal"); err != nil || fi.Size() != 0 {
		t.Errorf("after the TRUNCATE checkpoint: %v, %v; want an empty WAL", fi, err)
	}
	// and the writer pins again at its next commits.
	f.expectPinned("after an idle spell")
	if r, err := f.s.GetRun(context.Background(), "run"); err != nil || r.LastSeq != 2*f.w.k {
		t.Fatalf("after the idle spell: %+v, %v; want last seq %d", r, err, 2*f.w.k)
	}
}
