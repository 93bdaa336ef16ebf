package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
)

// SQLite copies the WAL back into the database file in checkpoints. Left
// to the committing connection (wal_autocheckpoint), a checkpoint runs
// inside the writer's COMMIT every 1,000 pages — page copies and two
// fsyncs on the path of every write waiting behind it. With synchronous
// NORMAL (backgroundCheckpoints) the store runs them on a goroutine of its
// own instead, with its own connection: the writer
// kicks it every few hundred journal rows, and a PASSIVE checkpoint copies
// what it can without blocking the writer. The writer keeps a far
// autocheckpoint (walRestartPages) as the backstop: when it fires, the
// background has copied nearly everything, so the writer's own checkpoint
// is short, and at the writer's next transaction SQLite starts the WAL over
// (a background checkpoint alone may never catch a busy writer, and the
// WAL would grow without end).

// backgroundCheckpoints reports whether a store with this synchronous
// setting (NORMAL or FULL, see Options) checkpoints in the background: with
// NORMAL a commit writes the WAL without fsync, and a checkpoint's two
// fsyncs were most of what a commit waited for. With FULL every commit
// fsyncs the WAL, and a checkpoint fsyncing the database file beside it
// made commits slower (single run ~280 → ~310 µs/step, 64 runs ~24,000 →
// ~22,000 steps/s in paired runs), so FULL keeps SQLite's autocheckpoint.
func backgroundCheckpoints(synchronous string) bool { return synchronous == "NORMAL" }

// walRestartPages is the writer's wal_autocheckpoint with background
// checkpoints, fullCheckpointPages without them (SQLite's default), both
// variables for tests, read at Open.
var (
	walRestartPages     = 4096
	fullCheckpointPages = 1000
)

// kickEveryRows and kickEveryBatches: the writer kicks the checkpointer
// when either many transitions (kickEveryRows: named when a transition
// was one journal row) or many transactions were committed since
// the last kick. Every checkpoint fsyncs the WAL and the database file,
// and those fsyncs slow the writer's own writes beside them. Paired runs
// on 2026-12-03:
//   - a lone run commits one row a transaction, so kickEveryBatches sets
//     its pace: a kick every 64 transactions made its steps ~15 % slower
//     than one every 256; 1,024 or 2,048 bought nothing more, and would
//     leave the backstop (walRestartPages) more to copy on the writer;
//   - 64 runs commit ~25 rows a transaction, so kickEveryRows sets theirs:
//     1,024 rows cost less CPU a step than 256 in four rounds of five.
const (
	kickEveryRows    = 1024
	kickEveryBatches = 256
)

// checkpointer runs PASSIVE checkpoints on its own connection when kicked.
type checkpointer struct {
	db     *sql.DB
	kicks  chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// runs counts the checkpoints run, for tests.
	runs atomic.Int64
}

func newCheckpointer(db *sql.DB) *checkpointer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{db: db, kicks: make(chan struct{}, 1), cancel: cancel}
	c.wg.Add(1)
	go c.loop(ctx)
	return c
}

// kick asks for a checkpoint; it never blocks.
func (c *checkpointer) kick() {
	select {
	case c.kicks <- struct{}{}:
	default:
	}
}

func (c *checkpointer) loop(ctx context.Context) {
	defer c.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kicks:
		}
		// Best effort: a failed checkpoint leaves the pages in the WAL,
		// where readers find them, and the writer's autocheckpoint is the
		// backstop. Cancelling ctx interrupts it (at Close), which is safe.
		_, _ = c.db.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
		c.runs.Add(1)
	}
}

// stop ends the goroutine and closes its connection.
func (c *checkpointer) stop() error {
	c.cancel()
	c.wg.Wait()
	return c.db.Close()
}
