package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store/internal/frames"
)

// convertBatch is how many journal rows convertJournal reads at a time.
const convertBatch = 512

// convertJournal is the Go part of migration 6: it moves every record of
// the old journal (journal_frames: frames of events and step records, one
// row per transition, some packed) into rows of the new journal, one a
// record, then drops journal_frames and journal_frames_index and indexes
// every new row (so their rows column, which only the bulk index of the
// tail reads, stays NULL). Records are carried as they were stored: an
// event's JSON, a step record's JSON and their versions unchanged, so a
// record that did not read before the migration does not read after it,
// with the same error naming its run and seq (a step record: its step);
// a row whose frames do not decode becomes one event row of no valid
// version at the row's seq.
func convertJournal(ctx context.Context, tx *sql.Tx) error {
	// the rows keep their records' versions: the writer's statement with
	// a parameter in place of its own.
	ins, err := tx.PrepareContext(ctx, strings.Replace(journalSQL[0], strconv.Itoa(journal.Version)+")", "?)", 1))
	if err != nil {
		return err
	}
	defer ins.Close()
	insert := func(version uint64, args ...any) error {
		_, err := ins.ExecContext(ctx, append(args, int64(version))...)
		return err
	}
	type row struct {
		id, rk, version, seq, at int64
		runID                    string
		events, steps            []byte
	}
	for last := int64(0); ; {
		var batch []row
		rows, err := tx.QueryContext(ctx, `SELECT j.id, j.rk, r.id, j.version, j.seq, j.at, j.events, j.steps
			FROM journal_frames j JOIN runs r ON r.rk = j.rk WHERE j.id > ? ORDER BY j.id LIMIT ?`, last, convertBatch)
		if err != nil {
			return err
		}
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.id, &r.rk, &r.runID, &r.version, &r.seq, &r.at, &r.events, &r.steps); err != nil {
				rows.Close()
				return err
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(batch) == 0 {
			break
		}
		for _, r := range batch {
			last = r.id
			if err := convertRow(r.runID, r.rk, r.version, r.seq, r.at, r.events, r.steps, insert); err != nil {
				return err
			}
		}
	}
	for _, q := range []string{
		`DROP TABLE journal_frames_index`,
		`DROP TABLE journal_frames`,
		`INSERT INTO journal_index (rk, id, last) SELECT rk, min(id), max(id) FROM journal GROUP BY rk, run_version`,
		`UPDATE journal_mark SET indexed = (SELECT coalesce(max(id), 0) FROM journal) WHERE one = 1`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// convertRow inserts the records of one old journal row (its events and
// steps columns, maybe packed) of run runID (key rk) as rows of the new
// journal, through insert (a record version, then the writer's values).
// The row is the transition that made the run's version version, its last
// seq seq, committed at at.
func convertRow(runID string, rk, version, seq, at int64, events, steps []byte, insert func(uint64, ...any) error) error {
	var bad error
	if isPacked(events) {
		events, steps, _, bad = unpack(runID, events, nil)
	}
	if bad == nil {
		bad = frames.EachEvent(runID, events, func(int64, uint64, []byte) error { return nil })
	}
	if bad != nil {
		// a row that does not decode stays damage of its run: one event
		// of no valid version at the row's seq, which reads as "the
		// database is damaged", naming the run and seq.
		return insert(0, rk, seq, "", nil, nil, nil, nil, nil, "", nil, nil, nil, nil, version, at, nil)
	}
	err := frames.EachEvent(runID, events, func(evSeq int64, evVersion uint64, data []byte) error {
		var ev journal.Event // what does not decode keeps zero columns
		if e, err := journal.ReadEvent(runID, evSeq, evVersion, data); err == nil {
			ev = *e
		}
		evAt, _ := eventNanos(ev.Time)
		var callKey any
		if ev.Call != nil {
			callKey = ev.Call.Key
		}
		return insert(evVersion, rk, evSeq, string(ev.Kind), nullText(ev.StepID), nullText(ev.Status), nullInt(ev.Attempt), evAt, callKey,
			string(data), nil, nil, nil, nil, version, at, nil)
	})
	if err != nil {
		return fmt.Errorf("convert the journal of run %s: %w", runID, err)
	}
	var insErr error
	err = frames.EachStepFrame(runID, steps, func(sf *journal.StoredStep) {
		if insErr != nil {
			return
		}
		// a record that does not decode is kept as it is (DecodeStep
		// reports it when the step is read), without status.
		_, rec, _ := journal.DecodeStep(runID, sf)
		insErr = insert(sf.Version, rk, seq, nil, sf.StepID, nullText(string(rec.Status)), nullInt(rec.Attempt), nil, nil,
			nil, string(sf.Rec), text(sf.Output), text(sf.Input), text(sf.Error), version, at, nil)
	})
	if err == nil {
		err = insErr
	}
	if err != nil {
		return fmt.Errorf("convert the step records of run %s: %w", runID, err)
	}
	return nil
}
