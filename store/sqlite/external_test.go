package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With CheckpointExternal rein checkpoints nothing, so the WAL only grows
// until another program checkpoints it, and the writer holds no read
// transaction between commits, so that program's RESTART checkpoint (the
// kind litestream runs when the WAL is long) finds no reader in its way.
// With CheckpointAuto the writer's pin makes the same checkpoint busy.
func TestCheckpointExternal(t *testing.T) {
	t.Parallel()
	for _, mode := range []Checkpoint{CheckpointAuto, CheckpointExternal} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "rein.db")
			s := openFile(t, path, &Options{Checkpoint: mode})
			other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
			if err != nil {
				t.Fatal(err)
			}
			other.SetMaxOpenConns(1)
			defer other.Close()
			w := createW5Runs(t, s, 1)[0]
			var last int64
			grew := true
			for range 3000 {
				if err := s.Commit(context.Background(), w.next()); err != nil {
					t.Fatal(err)
				}
				fi, err := os.Stat(path + "-wal")
				if err != nil {
					t.Fatal(err)
				}
				grew = grew && fi.Size() >= last
				last = fi.Size()
			}
			var busy, log, done int
			if err := other.QueryRow("PRAGMA wal_checkpoint(RESTART)").Scan(&busy, &log, &done); err != nil {
				t.Fatal(err)
			}
			switch mode {
			case CheckpointExternal:
				if s.ckpt != nil {
					t.Error("a background checkpointer runs")
				}
				if !grew || last < int64(fullCheckpointPages)*4096 {
					t.Errorf("the WAL was checkpointed by rein (grew monotonically: %v, %d bytes at the end)", grew, last)
				}
				if busy != 0 || log != done {
					t.Errorf("another program's RESTART checkpoint: busy %d, %d of %d frames copied; want every frame, not busy", busy, done, log)
				}
			case CheckpointAuto:
				if busy == 0 {
					t.Error("a RESTART checkpoint was not held back by the writer's pin: the test no longer tells the modes apart")
				}
			}
		})
	}
}

func TestParseDSN(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dsn, path string
		want      *Options
		err       string
	}{
		{dsn: "runs.db", path: "runs.db"},
		{dsn: "dir/runs.db?checkpoint=external", path: "dir/runs.db", want: &Options{Checkpoint: CheckpointExternal}},
		{dsn: "runs.db?checkpoint=auto&synchronous=full", path: "runs.db", want: &Options{Checkpoint: CheckpointAuto, Synchronous: "full"}},
		{dsn: "runs.db?checkpoint=never", err: `Options.Checkpoint "never": want auto or external`},
		{dsn: "runs.db?mode=ro", err: `unknown parameter "mode": want checkpoint=auto|external or synchronous=normal|full`},
		{dsn: "runs.db?checkpoint=%zz", err: `query "checkpoint=%zz"`},
		{dsn: "file:runs.db", path: "runs.db"},
		{dsn: "FILE:dir/runs.db?synchronous=full", path: "dir/runs.db", want: &Options{Synchronous: "full"}},
		{dsn: "file:///var/lib/rein/my%20runs.db", path: "/var/lib/rein/my runs.db"},
		{dsn: "file://localhost/var/lib/rein/rein.db", path: "/var/lib/rein/rein.db"},
		{dsn: "sqlite:runs.db?checkpoint=external", path: "runs.db", want: &Options{Checkpoint: CheckpointExternal}},
		{dsn: "sqlite:///tmp/runs.db", path: "/tmp/runs.db"},
		{dsn: "sqlite::memory:", path: ":memory:"},
		{dsn: "runs%20.db", path: "runs%20.db"},
		{dsn: "file://db.example.com/runs.db", err: `host "db.example.com": a SQLite DSN names a file of this host`},
		{dsn: "file:", err: "no path after the scheme"},
		{dsn: "file:runs%zz.db", err: `path "runs%zz.db"`},
	} {
		path, opts, err := ParseDSN(c.dsn)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), c.dsn) {
				t.Errorf("ParseDSN(%q): error %v, want one naming the DSN and %q", c.dsn, err, c.err)
			}
		case err != nil:
			t.Errorf("ParseDSN(%q): %v", c.dsn, err)
		case path != c.path || (opts == nil) != (c.want == nil) || (opts != nil && *opts != *c.want):
			t.Errorf("ParseDSN(%q) = %q, %+v; want %q, %+v", c.dsn, path, opts, c.path, c.want)
		}
	}
}
