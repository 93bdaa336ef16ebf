// Package records is the row layout the SQLite store (schema 6) and the
// PostgreSQL store (schema 5) share for a journal SQL can read: one row
// per event with typed columns (seq, kind, step_id, status, attempt, at,
// call_key) and the rest of the event as a JSON payload. It writes an
// event's payload (AppendPayload) and reads a row back into the event
// (ReadEvent), and says which read errors are damage (Damaged); and the
// budget ledger's row (ScanReservation). The tables
// and statements are each store's own.
package records

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
)

// AppendPayload appends the payload of e: its JSON (journal.AppendEvent)
// less the fields its row has columns for — seq, kind, step_id, status,
// attempt, the run (the row names it) and, when timed (its time is in the
// at column to the nanosecond, Nanos), its time. Any other field, of this
// rein or a newer one, is in the payload. ReadEvent puts them back.
func AppendPayload(dst []byte, e *journal.Event, timed bool) []byte {
	ev := *e
	ev.RunID, ev.Seq, ev.Kind, ev.StepID, ev.Status, ev.Attempt = "", 0, "", "", "", 0
	if timed {
		ev.Time = time.Time{}
	}
	start := len(dst)
	dst = journal.AppendEvent(dst, &ev)
	if !bytes.HasPrefix(dst[start:], untimedPrefix) {
		return dst // the event's time is in its payload
	}
	rest := dst[start+len(untimedPrefix):] // "}" or ",…}"
	if rest[0] == ',' {
		rest = rest[1:]
	}
	return append(dst[:start+1], rest...)
}

// untimedPrefix is how journal.AppendEvent begins an event without seq,
// time, kind and run: the part of an event's JSON AppendPayload leaves out.
var untimedPrefix = func() []byte {
	b := journal.AppendEvent(nil, &journal.Event{})
	return b[:len(b)-1]
}()

// Nanos is an event's time in Unix ns for its at column: valid is false
// for no time (NULL), the nearest representable is given for one outside
// the years 1678–2262, and exact reports whether n is the event's time to
// the nanosecond (else the payload keeps the time).
func Nanos(t time.Time) (n int64, valid, exact bool) {
	switch {
	case t.IsZero():
		return 0, false, false
	case t.Before(minNanos):
		return math.MinInt64, true, false
	case t.After(maxNanos):
		return math.MaxInt64, true, false
	}
	return t.UnixNano(), true, true
}

var (
	minNanos = time.Unix(0, math.MinInt64)
	maxNanos = time.Unix(0, math.MaxInt64)
)

// Row is one event row as read: its record version, its columns (a NULL
// text column is "", a NULL attempt 0; AtValid false for a NULL at) and
// its payload.
type Row struct {
	Seq, Version, Attempt, At int64
	AtValid                   bool
	Kind, StepID, Status      string
	Payload                   []byte
}

// ReadEvent decodes event r.Seq of run runID from its row: its payload
// (AppendPayload; rows converted from an older schema hold the whole
// JSON), the columns filling the fields the payload leaves out. A record
// this binary cannot read is a *journal.VersionError, one that does not
// decode an error naming the run and seq (Damaged tells them apart).
func ReadEvent(runID string, r *Row) (*journal.Event, error) {
	if err := journal.CheckVersion(runID, "seq "+strconv.FormatInt(r.Seq, 10), uint64(max(r.Version, 0))); err != nil {
		return nil, err
	}
	e := new(journal.Event)
	if err := journal.DecodeEvent(r.Payload, e); err != nil {
		return nil, fmt.Errorf("run %s seq %d: journal record does not decode (%w): the database is damaged", runID, r.Seq, err)
	}
	if e.Seq != 0 && e.Seq != r.Seq {
		return nil, fmt.Errorf("run %s seq %d: journal record says seq %d: the database is damaged", runID, r.Seq, e.Seq)
	}
	e.Seq, e.RunID = r.Seq, runID
	if e.Kind == "" {
		e.Kind = journal.Kind(r.Kind)
	}
	if e.StepID == "" {
		e.StepID = r.StepID
	}
	if e.Status == "" {
		e.Status = r.Status
	}
	if e.Attempt == 0 {
		e.Attempt = int(r.Attempt)
	}
	if e.Time.IsZero() && r.AtValid {
		e.Time = time.Unix(0, r.At).UTC()
	}
	return e, nil
}

// Damaged is the error of a store (named by prefix, "sqlite") for a
// journal record that does not read: store.ErrDamaged, but for a record
// from a newer rein, which is not damage (upgrade rein) and stays the
// *journal.VersionError it is.
func Damaged(prefix string, err error) error {
	if ve := (*journal.VersionError)(nil); errors.As(err, &ve) && ve.Newer() {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	return fmt.Errorf("%w: %s: %w", store.ErrDamaged, prefix, err)
}

// LastSteps folds a run's step records read in journal order into the
// last record of each step, in the order the steps were first written
// (the one a Steps read decodes). The zero value is ready to use.
type LastSteps struct {
	index map[string]int
	list  []journal.StoredStep
}

// Add takes the next record; a later record of a step replaces its earlier
// one in place.
func (l *LastSteps) Add(sf journal.StoredStep) {
	if i, ok := l.index[sf.StepID]; ok {
		l.list[i] = sf
		return
	}
	if l.index == nil {
		l.index = map[string]int{}
	}
	l.index[sf.StepID] = len(l.list)
	l.list = append(l.list, sf)
}

// List is each step's last record, in first-written order.
func (l *LastSteps) List() []journal.StoredStep { return l.list }
