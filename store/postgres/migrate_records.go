package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store/internal/frames"
	"github.com/reinhq/rein/store/internal/records"
)

// convertBatch is how many rows of rein_journal convertJournal reads at a
// time.
const convertBatch = 512

// convertJournal is the Go part of migration 5: it moves every record of
// the journal's frames (rein_journal's events and steps columns, one row
// per transition) into rows of rein_records, one a record, then drops
// those columns. Records are carried as they were stored: an event's JSON,
// a step record's JSON and their versions unchanged, so a record that did
// not read before the migration does not read after it, naming its run
// and seq (a step record: its step). A row whose frames do not decode
// becomes one event row of no valid version at the row's seq; JSON the
// json columns refuse (it does not parse) is kept as a JSON string of its
// text, which does not decode as a record either.
func convertJournal(ctx context.Context, tx *sql.Tx) error {
	ins := recordsSQL(`(SELECT $1::text AS run_id, $2::bigint AS version, $3::bigint AS seq)`, 4)
	type row struct {
		runID         string
		version, seq  int64
		events, steps []byte
	}
	lastRun, lastVersion := "", int64(0)
	for {
		rows, err := tx.QueryContext(ctx, `SELECT run_id, version, seq, events, steps FROM rein_journal
			WHERE (run_id, version) > ($1, $2) AND (events IS NOT NULL OR steps IS NOT NULL)
			ORDER BY run_id, version LIMIT $3`, lastRun, lastVersion, convertBatch)
		if err != nil {
			return err
		}
		var batch []row
		for rows.Next() {
			var x row
			if err := rows.Scan(&x.runID, &x.version, &x.seq, &x.events, &x.steps); err != nil {
				rows.Close()
				return err
			}
			batch = append(batch, x)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(batch) == 0 {
			break
		}
		for _, r := range batch {
			lastRun, lastVersion = r.runID, r.version
			var rr recordRows
			if err := convertRow(&rr, r.runID, r.seq, r.events, r.steps); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, ins, append([]any{r.runID, r.version, r.seq}, rr.args()...)...); err != nil {
				return fmt.Errorf("convert the journal of run %s at version %d: %w", r.runID, r.version, err)
			}
		}
	}
	_, err := tx.ExecContext(ctx, `ALTER TABLE rein_journal DROP COLUMN events, DROP COLUMN steps`)
	return err
}

// convertRow adds to rr the records of one row of run runID (its events
// and steps columns of frames), whose last seq is seq.
func convertRow(rr *recordRows, runID string, seq int64, events, steps []byte) error {
	bad := frames.EachEvent(runID, events, func(int64, uint64, []byte) error { return nil })
	if bad == nil {
		bad = frames.EachStepFrame(runID, steps, func(*journal.StoredStep) {})
	}
	if bad != nil {
		// a row that does not decode stays damage of its run: one event
		// of no valid version at the row's seq, which reads as "the
		// database is damaged", naming the run and seq.
		empty := ""
		rr.add(seq, 0, &empty, "", "", 0, nil, "", "", "", "", "", "")
		return nil
	}
	err := frames.EachEvent(runID, events, func(evSeq int64, evVersion uint64, data []byte) error {
		var ev journal.Event // what does not decode keeps zero columns
		if e, err := journal.ReadEvent(runID, evSeq, evVersion, data); err == nil {
			ev = *e
		}
		n, valid, _ := records.Nanos(ev.Time)
		var at *int64
		if valid {
			at = &n
		}
		kind := string(ev.Kind)
		var callKey string
		if ev.Call != nil {
			callKey = ev.Call.Key
		}
		rr.add(evSeq, evVersion, &kind, ev.StepID, ev.Status, int64(ev.Attempt), at, callKey, jsonText(data), "", "", "", "")
		return nil
	})
	if err != nil {
		return err
	}
	return frames.EachStepFrame(runID, steps, func(sf *journal.StoredStep) {
		// a record that does not decode is kept as it is (DecodeStep
		// reports it when the step is read), without status.
		_, rec, _ := journal.DecodeStep(runID, sf)
		rr.add(0, sf.Version, nil, sf.StepID, string(rec.Status), int64(rec.Attempt), nil, "",
			"", jsonText(sf.Rec), jsonText(sf.Output), jsonText(sf.Input), jsonText(sf.Error))
	})
}

// jsonText is b for a json column: b when it is JSON (or empty: NULL),
// else the JSON string of its text.
func jsonText(b []byte) string {
	if len(b) == 0 || (json.Valid(b) && utf8.Valid(b)) {
		return string(b)
	}
	q, _ := json.Marshal(string(b))
	return string(q)
}
