package postgres

import (
	"fmt"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store/internal/records"
)

// recordRows are the rows of rein_records a transition appends, column by
// column (migrations/0005_journal_rows.sql): its events, then its step
// records. They are sent as arrays, one parameter a column, that the
// statement unnests (recordsSQL): the statement's text is the same for
// every transition, so PostgreSQL plans it once per connection.
type recordRows struct {
	// seq is 0 for a step record: the run's last seq after the transition.
	seq, attempt []int64
	// version is the record version of each row (a converted row keeps
	// its own; a new one is journal.Version).
	version []int64
	// kind is nil for a step record; at nil for an event without a time.
	kind []*string
	at   []*int64
	// "" is NULL.
	stepID, status, callKey                 []string
	payload, record, output, input, errJSON []string
}

// event adds the row of event e (whose payload is encoded in scratch; it
// returns scratch grown).
func (r *recordRows) event(e *journal.Event, scratch []byte) []byte {
	n, valid, exact := records.Nanos(e.Time)
	var at *int64
	if valid {
		at = &n
	}
	scratch = records.AppendPayload(scratch[:0], e, exact)
	kind := string(e.Kind)
	var callKey string
	if e.Call != nil {
		callKey = e.Call.Key
	}
	r.add(e.Seq, journal.Version, &kind, e.StepID, e.Status, int64(e.Attempt), at, callKey, string(scratch), "", "", "", "")
	return scratch
}

// step adds the row of a step record (encoded by journal.EncodeStep).
func (r *recordRows) step(st *journal.Step, e *journal.EncodedStep) {
	r.add(0, journal.Version, nil, st.StepID, string(st.Status), int64(st.Attempt), nil, "",
		"", string(e.Rec), string(e.Output), string(e.Input), string(e.Error))
}

func (r *recordRows) add(seq int64, version uint64, kind *string, stepID, status string, attempt int64, at *int64, callKey string,
	payload, record, output, input, errJSON string) {
	r.seq, r.version, r.kind, r.at = append(r.seq, seq), append(r.version, int64(version)), append(r.kind, kind), append(r.at, at)
	r.stepID, r.status, r.attempt, r.callKey = append(r.stepID, stepID), append(r.status, status), append(r.attempt, attempt), append(r.callKey, callKey)
	r.payload, r.record = append(r.payload, payload), append(r.record, record)
	r.output, r.input, r.errJSON = append(r.output, output), append(r.input, input), append(r.errJSON, errJSON)
}

// args are recordsSQL's arguments, in its parameters' order.
func (r *recordRows) args() []any {
	return []any{r.seq, r.version, r.kind, r.stepID, r.status, r.attempt, r.at, r.callKey,
		r.payload, r.record, r.output, r.input, r.errJSON}
}

// recordsArgs is how many parameters recordsSQL takes.
const recordsArgs = 13

// recordsSQL inserts the rows of recordRows.args, given as parameters
// $first … $first+12, for each row of the query from (its columns
// run_id, version: the run version after the transition, and seq: the run's
// last seq after it).
func recordsSQL(from string, first int) string {
	p := make([]any, recordsArgs)
	for i := range p {
		p[i] = first + i
	}
	return fmt.Sprintf(`INSERT INTO rein_records (run_id, run_version, seq, version, kind, step_id, status, attempt, at,
			call_key, payload, record, output, input, error)
		SELECT h.run_id, h.version, CASE WHEN u.seq = 0 THEN h.seq ELSE u.seq END, u.version, u.kind,
			nullif(u.step_id, ''), nullif(u.status, ''), nullif(u.attempt, 0), u.at, nullif(u.call_key, ''),
			nullif(u.payload, '')::json, nullif(u.record, '')::json, nullif(u.output, '')::json,
			nullif(u.input, '')::json, nullif(u.error, '')::json
		FROM `+from+` h, unnest($%d::bigint[], $%d::integer[], $%d::text[], $%d::text[], $%d::text[], $%d::integer[],
			$%d::bigint[], $%d::text[], $%d::text[], $%d::text[], $%d::text[], $%d::text[], $%d::text[])
			WITH ORDINALITY AS u (seq, version, kind, step_id, status, attempt, at, call_key, payload, record, output, input, error, o)
		ORDER BY u.o`, p...)
}
