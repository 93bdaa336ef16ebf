package sqlite

import (
	"context"
	"database/sql/driver"
	"time"
)

// The writer keeps its read transaction open between its write
// transactions: the pin, a statement stepped once and left unfinished.
//
// In WAL mode every transaction begins by taking a read lock on a slot of
// the WAL index whose mark says how far the WAL is read, and every commit
// moves the end of the WAL past every mark. So a connection that ends its
// transaction at COMMIT and begins the next with BEGIN IMMEDIATE goes
// through six fcntl calls on the -shm file each time: COMMIT drops the
// write and the read lock; BEGIN takes a slot exclusively to move its mark
// to the new end, lets it go, takes it shared, then takes the write lock.
// On this kind of machine an fcntl is ~1.8 µs, so that was half of a raw
// 22 µs commit. With a statement still reading, SQLite keeps the read
// transaction across COMMIT (the btree is downgraded to a read
// transaction, see btreeEndTransaction), and its snapshot is the commit the
// connection just wrote; the next BEGIN IMMEDIATE only takes the write lock
// and finds that snapshot current. Two fcntl calls a transaction instead of
// six.
//
// What the pin costs, and how the writer bounds it:
//   - Another connection's commit makes the pinned snapshot stale: BEGIN
//     IMMEDIATE then fails (SQLITE_BUSY_SNAPSHOT), and also fails at once,
//     without the busy handler, when another connection holds the write
//     lock. The writer lets the pin go and begins again, unpinned, which
//     reads a fresh snapshot and waits for the lock as before.
//   - A checkpoint copies the WAL only up to the oldest mark a reader holds,
//     and SQLite starts the WAL over only when a writer begins with the WAL
//     wholly copied. So the writer lets the pin go before the COMMIT of every
//     batch that kicks the checkpointer (kickEvery*; in every mode, not only
//     with background checkpoints): that commit's own autocheckpoint, and
//     the background checkpoint it kicks, copy everything, and the next
//     transaction may restart the WAL as it did before the pin. While
//     pinned, SQLite's autocheckpoint on the writer's connection does
//     nothing (a connection inside a read transaction cannot checkpoint).
//   - A writer lets the pin go once a whole pinIdle (a second) went by
//     without a batch, one to two pinIdle after its last one, so an idle
//     process holds no read lock and holds no other process's checkpoint
//     back.
//   - Before a ROLLBACK and at Close the pin is let go first.
//
// ":memory:" has no WAL and is never pinned; nor is a store whose WAL
// another program checkpoints (CheckpointExternal): litestream's
// TRUNCATE checkpoints wait for every reader, and its PASSIVE ones stop
// at the oldest.

// pinSQL is the pin: sqlite_schema is read by it and never written by the
// writer's batches, and has at least the store's own tables, so the
// statement stops at its first row.
const pinSQL = "SELECT 1 FROM sqlite_schema"

// pinIdle is how long the writer keeps its pin without committing (a
// variable for tests, read at Open).
var pinIdle = time.Second

// pinOn opens the pin inside the batch's transaction, when there is none.
// A pin that cannot be opened is no error: the writer works without it.
func (w *writer) pinOn(c *stmtCache) {
	if w.memory || w.noPin || w.pin != nil {
		return
	}
	st, err := c.prepared(context.Background(), pinSQL)
	if err != nil {
		return
	}
	rows, err := st.(driver.StmtQueryContext).QueryContext(context.Background(), nil)
	if err != nil {
		return
	}
	w.pin = rows
	w.mu.Lock()
	if !w.pinTimed && !w.closed {
		w.pinTimed = true
		w.pinSeen = w.batches.Load()
		if w.pinTimer == nil {
			w.pinTimer = time.AfterFunc(w.pinIdle, w.idleUnpin)
		} else {
			w.pinTimer.Reset(w.pinIdle)
		}
	}
	w.mu.Unlock()
}

// unpin lets the pin go: resetting the statement ends the read transaction
// when no transaction is open, and inside one, lets the COMMIT end it.
func (w *writer) unpin() {
	if w.pin != nil {
		_ = w.pin.Close() // resets the statement; a reset after a row reports nothing
		w.pin = nil
	}
}

// idleUnpin runs pinIdle after the pin was opened, and again every pinIdle
// while the writer keeps committing; once a whole pinIdle went by without a
// batch, it takes the lead, as a caller would, and lets the pin go.
func (w *writer) idleUnpin() {
	w.mu.Lock()
	if w.closed {
		w.pinTimed = false
		w.mu.Unlock()
		return
	}
	if n := w.batches.Load(); w.busy || n != w.pinSeen {
		w.pinSeen = n
		w.pinTimer.Reset(w.pinIdle)
		w.mu.Unlock()
		return
	}
	w.busy = true
	w.pinTimed = false
	w.mu.Unlock()
	if w.pin != nil && w.conn != nil {
		_ = w.conn.Raw(func(any) error {
			w.unpin()
			return nil
		})
	}
	w.mu.Lock()
	if len(w.queue) > 0 {
		// a caller queued while the pin was let go: it leads now.
		w.queue[0].done <- errLead
	} else {
		w.busy = false
		w.idle.Broadcast()
	}
	w.mu.Unlock()
}
