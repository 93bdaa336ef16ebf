package sqlite

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/value"
)

// A journal row holds its transition's records in two columns of frames.
//
//	events: per event   uvarint(seq) uvarint(record version) uvarint(len) JSON of trace.Event
//	steps:  per step    uvarint(record version) uvarint(len) step ID
//	                    uvarint(len) JSON of stepRecord
//	                    uvarint(len) output  uvarint(len) input  uvarint(len) error
//
// Each record carries its own version, so one record that does not decode,
// or that a newer rein wrote, is an error about that record alone: the
// records before and after it still read. Step payloads (output, input,
// error) are stored as the bytes the engine gave, outside the JSON, so they
// round-trip exactly and cost no re-encoding; the step ID is outside it too,
// so folding a run's records decodes only the last one of each step.

// errFrame is a frame cut short.
var errFrame = errors.New("frame is truncated")

func appendBytes(b, data []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

// appendEvent appends the frame of one encoded event.
func appendEvent(b []byte, seq int64, data []byte) []byte {
	b = binary.AppendUvarint(b, uint64(seq))
	b = binary.AppendUvarint(b, store.JournalVersion)
	return appendBytes(b, data)
}

// frames reads frames; a read past the end sets err.
type frames struct {
	b   []byte
	err error
}

func (f *frames) more() bool { return f.err == nil && len(f.b) > 0 }

func (f *frames) uvarint() uint64 {
	if f.err != nil {
		return 0
	}
	v, n := binary.Uvarint(f.b)
	if n <= 0 {
		f.err = errFrame
		return 0
	}
	f.b = f.b[n:]
	return v
}

func (f *frames) bytes() []byte {
	n := f.uvarint()
	if f.err != nil {
		return nil
	}
	if n > uint64(len(f.b)) {
		f.err = errFrame
		return nil
	}
	out := f.b[:n:n]
	f.b = f.b[n:]
	return out
}

// checkVersion refuses a record this binary cannot read.
func checkVersion(runID, what string, version uint64) error {
	switch {
	case version > store.JournalVersion:
		return fmt.Errorf("sqlite: run %s %s: journal record version %d is from a newer rein (this binary reads up to version %d): upgrade rein",
			runID, what, version, store.JournalVersion)
	case version < 1:
		return fmt.Errorf("sqlite: run %s %s: journal record has no valid version (%d): the database is damaged", runID, what, version)
	}
	return nil
}

// decodeEvents appends the events of one row with Seq > after to out, at
// most limit in all (limit < 0: no limit).
func decodeEvents(out []*trace.Event, runID string, row []byte, after int64, limit int) ([]*trace.Event, error) {
	f := frames{b: row}
	for f.more() && (limit < 0 || len(out) < limit) {
		seq := int64(f.uvarint())
		version := f.uvarint()
		data := f.bytes()
		if f.err != nil {
			return nil, fmt.Errorf("sqlite: run %s: journal record after seq %d: %w: the database is damaged", runID, seq, f.err)
		}
		if seq <= after {
			continue
		}
		if err := checkVersion(runID, fmt.Sprintf("seq %d", seq), version); err != nil {
			return nil, err
		}
		var e trace.Event
		if err := json.Unmarshal(data, &e); err != nil {
			return nil, fmt.Errorf("sqlite: run %s seq %d: journal record does not decode (%w): the database is damaged", runID, seq, err)
		}
		if e.Seq != seq {
			return nil, fmt.Errorf("sqlite: run %s seq %d: journal record says seq %d: the database is damaged", runID, seq, e.Seq)
		}
		if e.RunID == "" {
			e.RunID = runID // stored events leave out the row's run ID
		}
		out = append(out, &e)
	}
	return out, nil
}

// stepRecord is the JSON of a step frame: the projection without its
// payloads, which follow the JSON as bytes.
type stepRecord struct {
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

// appendJSON appends r as the JSON encoding/json writes for it (the
// journal's step records are on the hot path of every commit).
func (r *stepRecord) appendJSON(b []byte) []byte {
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

// appendStep appends the frame of one encoded step.
func appendStep(b []byte, stepID string, rec []byte, output, input, errJSON []byte) []byte {
	b = binary.AppendUvarint(b, store.JournalVersion)
	b = binary.AppendUvarint(b, uint64(len(stepID)))
	b = append(b, stepID...)
	b = appendBytes(b, rec)
	b = appendBytes(b, output)
	b = appendBytes(b, input)
	return appendBytes(b, errJSON)
}

// stepFrame is a step frame read back, not decoded yet; its slices alias
// the row.
type stepFrame struct {
	version                     uint64
	stepID                      string
	rec, output, input, errJSON []byte
}

// eachStepFrame calls fn for each step frame of one row.
func eachStepFrame(runID string, row []byte, fn func(*stepFrame)) error {
	f := frames{b: row}
	for f.more() {
		var sf stepFrame
		sf.version = f.uvarint()
		sf.stepID = string(f.bytes())
		sf.rec, sf.output, sf.input, sf.errJSON = f.bytes(), f.bytes(), f.bytes(), f.bytes()
		if f.err != nil {
			return fmt.Errorf("sqlite: run %s: step record: %w: the database is damaged", runID, f.err)
		}
		fn(&sf)
	}
	return nil
}

// decode reads the frame's record.
func (sf *stepFrame) decode(runID string) (stepRecord, error) {
	var rec stepRecord
	if err := checkVersion(runID, "step "+sf.stepID, sf.version); err != nil {
		return rec, err
	}
	if err := json.Unmarshal(sf.rec, &rec); err != nil {
		return rec, fmt.Errorf("sqlite: run %s step %s: step record does not decode (%w): the database is damaged", runID, sf.stepID, err)
	}
	if rec.StepID != sf.stepID {
		return rec, fmt.Errorf("sqlite: run %s step %s: step record says step %q: the database is damaged", runID, sf.stepID, rec.StepID)
	}
	return rec, nil
}
