// Package frames is the byte layout of rein's journal rows, shared by the
// SQLite and PostgreSQL stores: a row holds one transition's events and
// step records as length-prefixed frames, each with its own record
// version. Errors name the run and the record; the stores prefix them with
// their own name.
package frames

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/value"
)

// A journal row holds its transition's records in two columns of frames.
//
//	events: per event   uvarint(seq) uvarint(record version) uvarint(len) JSON of trace.Event
//	steps:  per step    uvarint(record version) uvarint(len) step ID
//	                    uvarint(len) JSON of StepRecord
//	                    uvarint(len) output  uvarint(len) input  uvarint(len) error
//
// Each record carries its own version, so one record that does not decode,
// or that a newer rein wrote, is an error about that record alone: the
// records before and after it still read. Step payloads (output, input,
// error) are stored as the bytes the engine gave, outside the JSON, so they
// round-trip exactly and cost no re-encoding; the step ID is outside it too,
// so folding a run's records decodes only the last one of each step.

// ErrTruncated is a frame cut short.
var ErrTruncated = errors.New("frame is truncated")

// AppendBytes appends data with its length in front.
func AppendBytes(b, data []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

// AppendEvent appends the frame of one encoded event (its JSON).
func AppendEvent(b []byte, seq int64, data []byte) []byte {
	b = binary.AppendUvarint(b, uint64(seq))
	b = binary.AppendUvarint(b, store.JournalVersion)
	return AppendBytes(b, data)
}

// reader reads frames; a read past the end sets err.
type reader struct {
	b   []byte
	err error
}

func (f *reader) more() bool { return f.err == nil && len(f.b) > 0 }

func (f *reader) uvarint() uint64 {
	if f.err != nil {
		return 0
	}
	v, n := binary.Uvarint(f.b)
	if n <= 0 {
		f.err = ErrTruncated
		return 0
	}
	f.b = f.b[n:]
	return v
}

func (f *reader) bytes() []byte {
	n := f.uvarint()
	if f.err != nil {
		return nil
	}
	if n > uint64(len(f.b)) {
		f.err = ErrTruncated
		return nil
	}
	out := f.b[:n:n]
	f.b = f.b[n:]
	return out
}

// CheckVersion refuses a record this binary cannot read.
func CheckVersion(runID, what string, version uint64) error {
	switch {
	case version > store.JournalVersion:
		return fmt.Errorf("run %s %s: journal record version %d is from a newer rein (this binary reads up to version %d): upgrade rein",
			runID, what, version, store.JournalVersion)
	case version < 1:
		return fmt.Errorf("run %s %s: journal record has no valid version (%d): the database is damaged", runID, what, version)
	}
	return nil
}

// DecodeEvents appends the events of one row with Seq > after to out, at
// most limit in all (limit < 0: no limit).
func DecodeEvents(out []*trace.Event, runID string, row []byte, after int64, limit int) ([]*trace.Event, error) {
	f := reader{b: row}
	for f.more() && (limit < 0 || len(out) < limit) {
		seq := int64(f.uvarint())
		version := f.uvarint()
		data := f.bytes()
		if f.err != nil {
			return nil, fmt.Errorf("run %s: journal record after seq %d: %w: the database is damaged", runID, seq, f.err)
		}
		if seq <= after {
			continue
		}
		if err := CheckVersion(runID, fmt.Sprintf("seq %d", seq), version); err != nil {
			return nil, err
		}
		var e trace.Event
		if err := json.Unmarshal(data, &e); err != nil {
			return nil, fmt.Errorf("run %s seq %d: journal record does not decode (%w): the database is damaged", runID, seq, err)
		}
		switch e.Seq {
		case seq:
		case 0:
			// a record stored without its number (PostgreSQL's schema 1
			// numbered such events in a column of their own): the frame's.
			e.Seq = seq
		default:
			return nil, fmt.Errorf("run %s seq %d: journal record says seq %d: the database is damaged", runID, seq, e.Seq)
		}
		if e.RunID == "" {
			e.RunID = runID // stored events leave out the row's run ID
		}
		out = append(out, &e)
	}
	return out, nil
}

// StepRecord is the JSON of a step frame: the projection without its
// payloads, which follow the JSON as bytes.
type StepRecord struct {
	StepID     string           `json:"step_id"`
	Type       string           `json:"type,omitempty"`
	Status     trace.StepStatus `json:"status"`
	Attempt    int              `json:"attempt,omitempty"`
	OutputSHA  string           `json:"output_sha256,omitempty"`
	OutputBlob bool             `json:"output_blob,omitempty"` // the output is the blob OutputSHA
	InputBlob  string           `json:"input_blob,omitempty"`  // the input is this blob
	Idempotent bool             `json:"idempotent,omitempty"`
	StartedAt  int64            `json:"started_at,omitempty"`
	SettledAt  int64            `json:"settled_at,omitempty"`
}

// AppendJSON appends r as the JSON encoding/json writes for it (the
// journal's step records are on the hot path of every commit).
func (r *StepRecord) AppendJSON(b []byte) []byte {
	b = append(b, `{"step_id":`...)
	b = value.AppendString(b, r.StepID)
	if r.Type != "" {
		b = value.AppendString(append(b, `,"type":`...), r.Type)
	}
	b = value.AppendString(append(b, `,"status":`...), string(r.Status))
	if r.Attempt != 0 {
		b = strconv.AppendInt(append(b, `,"attempt":`...), int64(r.Attempt), 10)
	}
	if r.OutputSHA != "" {
		b = value.AppendString(append(b, `,"output_sha256":`...), r.OutputSHA)
	}
	if r.OutputBlob {
		b = append(b, `,"output_blob":true`...)
	}
	if r.InputBlob != "" {
		b = value.AppendString(append(b, `,"input_blob":`...), r.InputBlob)
	}
	if r.Idempotent {
		b = append(b, `,"idempotent":true`...)
	}
	if r.StartedAt != 0 {
		b = strconv.AppendInt(append(b, `,"started_at":`...), r.StartedAt, 10)
	}
	if r.SettledAt != 0 {
		b = strconv.AppendInt(append(b, `,"settled_at":`...), r.SettledAt, 10)
	}
	return append(b, '}')
}

// AppendStep appends the frame of one encoded step.
func AppendStep(b []byte, stepID string, rec []byte, output, input, errJSON []byte) []byte {
	b = binary.AppendUvarint(b, store.JournalVersion)
	b = binary.AppendUvarint(b, uint64(len(stepID)))
	b = append(b, stepID...)
	b = AppendBytes(b, rec)
	b = AppendBytes(b, output)
	b = AppendBytes(b, input)
	return AppendBytes(b, errJSON)
}

// StepFrame is a step frame read back, not decoded yet; its slices alias
// the row.
type StepFrame struct {
	Version                   uint64
	StepID                    string
	Rec, Output, Input, Error []byte
}

// EachStepFrame calls fn for each step frame of one row.
func EachStepFrame(runID string, row []byte, fn func(*StepFrame)) error {
	f := reader{b: row}
	for f.more() {
		var sf StepFrame
		sf.Version = f.uvarint()
		sf.StepID = string(f.bytes())
		sf.Rec, sf.Output, sf.Input, sf.Error = f.bytes(), f.bytes(), f.bytes(), f.bytes()
		if f.err != nil {
			return fmt.Errorf("run %s: step record: %w: the database is damaged", runID, f.err)
		}
		fn(&sf)
	}
	return nil
}

// Decode reads the frame's record.
func (sf *StepFrame) Decode(runID string) (StepRecord, error) {
	var rec StepRecord
	if err := CheckVersion(runID, "step "+sf.StepID, sf.Version); err != nil {
		return rec, err
	}
	if err := json.Unmarshal(sf.Rec, &rec); err != nil {
		return rec, fmt.Errorf("run %s step %s: step record does not decode (%w): the database is damaged", runID, sf.StepID, err)
	}
	if rec.StepID != sf.StepID {
		return rec, fmt.Errorf("run %s step %s: step record says step %q: the database is damaged", runID, sf.StepID, rec.StepID)
	}
	return rec, nil
}

// ReplaceEvent returns a copy of the events column row with the frame of
// seq replaced by one holding version and data as they are (for tests that
// damage a record on purpose); hit reports whether seq was in the row.
func ReplaceEvent(row []byte, seq int64, version int, data []byte) (out []byte, hit bool, err error) {
	f := reader{b: row}
	for f.more() {
		s, v, d := f.uvarint(), f.uvarint(), f.bytes()
		if f.err != nil {
			return nil, false, f.err
		}
		out = binary.AppendUvarint(out, s)
		if int64(s) == seq {
			hit, v, d = true, uint64(version), data
		}
		out = AppendBytes(binary.AppendUvarint(out, v), d)
	}
	return out, hit, nil
}

// Fold folds a run's step frames, row after row: it keeps the last frame
// of each step, in the order the steps were first written. Only those
// frames need decoding. The frames alias the rows given to Add.
type Fold struct {
	Last  []StepFrame
	index map[string]int
}

// Add folds the step frames of one row of run runID.
func (f *Fold) Add(runID string, row []byte) error {
	if f.index == nil {
		f.index = map[string]int{}
	}
	return EachStepFrame(runID, row, func(sf *StepFrame) {
		if i, ok := f.index[sf.StepID]; ok {
			f.Last[i] = *sf
			return
		}
		f.index[sf.StepID] = len(f.Last)
		f.Last = append(f.Last, *sf)
	})
}

// EncodedStep is a step projection ready to journal (AppendStep), its
// large payloads split off into blobs.
type EncodedStep struct {
	Rec                   []byte // the StepRecord JSON
	Output, Input         []byte // inline payloads (nil when in blobs)
	Error                 []byte
	OutputBlob, InputBlob string // sha256 of a payload that goes to blobs
	OutputData, InputData []byte // those payloads
}

// EncodeStep encodes st's record into buf, moving an output or input
// longer than threshold bytes to a blob (none when threshold < 0). It
// returns the encoding and buf grown by the record.
func EncodeStep(st *store.Step, threshold int, buf []byte) (EncodedStep, []byte) {
	rec := StepRecord{StepID: st.StepID, Type: st.Type, Status: st.Status, Attempt: st.Attempt,
		OutputSHA: st.OutputSHA, Idempotent: st.Idempotent, StartedAt: unixNanos(st.StartedAt), SettledAt: unixNanos(st.SettledAt)}
	e := EncodedStep{Output: st.Output, Input: st.Input, Error: st.Error}
	if threshold >= 0 && len(st.Output) > threshold {
		sum := sha256.Sum256(st.Output)
		rec.OutputSHA, rec.OutputBlob = hex.EncodeToString(sum[:]), true
		e.OutputBlob, e.OutputData, e.Output = rec.OutputSHA, st.Output, nil
	}
	if threshold >= 0 && len(st.Input) > threshold {
		sum := sha256.Sum256(st.Input)
		rec.InputBlob = hex.EncodeToString(sum[:])
		e.InputBlob, e.InputData, e.Input = rec.InputBlob, st.Input, nil
	}
	e.Rec = rec.AppendJSON(buf)
	return e, e.Rec
}

// Step is the projection a decoded record and its frame's payloads
// describe, for run runID. Its payloads alias the frame; an empty one is
// nil.
func (sf *StepFrame) Step(runID string, r *StepRecord) *store.Step {
	return &store.Step{RunID: runID, StepID: r.StepID, Type: r.Type, Status: r.Status, Attempt: r.Attempt,
		Output: nilIfEmpty(sf.Output), OutputSHA: r.OutputSHA, Input: nilIfEmpty(sf.Input), Idempotent: r.Idempotent,
		Error: nilIfEmpty(sf.Error), StartedAt: TimeOf(r.StartedAt), SettledAt: TimeOf(r.SettledAt)}
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// TimeOf is the time of a record's unix nanoseconds (zero for 0).
func TimeOf(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
