// Package frames is the byte layout of the journal rows of the SQLite store
// before its schema 6 and of the PostgreSQL store before its schema 5
// (whose migrations read them with EachEvent and EachStepFrame): a row holds one transition's events
// and step records as length-prefixed frames, each with its own record
// version. Errors name the run and the record; the stores prefix them with
// their own name.
package frames

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/reinhq/rein/journal"
)

// A journal row holds its transition's records in two columns of frames.
//
//	events: per event   uvarint(seq) uvarint(record version) uvarint(len) JSON of journal.Event
//	steps:  per step    uvarint(record version) uvarint(len) step ID
//	                    uvarint(len) JSON of journal.StepRecord
//	                    uvarint(len) output  uvarint(len) input  uvarint(len) error
//
// The records and their encoding are package journal's; this package only
// lays them out. Each record carries its own version, so one record that
// does not decode, or that a newer rein wrote, is an error about that
// record alone: the records before and after it still read. The step ID is
// outside the step's JSON, so folding a run's records decodes only the last
// one of each step. Stored events leave out the run ID the row names.

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
	b = binary.AppendUvarint(b, journal.Version)
	return AppendBytes(b, data)
}

// EncodeEvent appends the frame of e, without its run ID (the row names
// it), encoding it in scratch; it returns b and scratch grown.
func EncodeEvent(b, scratch []byte, e *journal.Event) ([]byte, []byte) {
	ev := *e
	ev.RunID = ""
	scratch = journal.AppendEvent(scratch[:0], &ev)
	return AppendEvent(b, e.Seq, scratch), scratch
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

// EachEvent calls fn with the sequence number, record version and JSON of
// each event frame of one row, not decoded (data aliases row).
func EachEvent(runID string, row []byte, fn func(seq int64, version uint64, data []byte) error) error {
	f := reader{b: row}
	for f.more() {
		seq := int64(f.uvarint())
		version := f.uvarint()
		data := f.bytes()
		if f.err != nil {
			return fmt.Errorf("run %s: journal record after seq %d: %w: the database is damaged", runID, seq, f.err)
		}
		if err := fn(seq, version, data); err != nil {
			return err
		}
	}
	return nil
}

// DecodeEvents appends the events of one row with Seq > after to out, at
// most limit in all (limit < 0: no limit).
func DecodeEvents(out []*journal.Event, runID string, row []byte, after int64, limit int) ([]*journal.Event, error) {
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
		e, err := journal.ReadEvent(runID, seq, version, data)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// AppendStep appends the frame of one encoded step.
func AppendStep(b []byte, stepID string, rec []byte, output, input, errJSON []byte) []byte {
	b = binary.AppendUvarint(b, journal.Version)
	b = binary.AppendUvarint(b, uint64(len(stepID)))
	b = append(b, stepID...)
	b = AppendBytes(b, rec)
	b = AppendBytes(b, output)
	b = AppendBytes(b, input)
	return AppendBytes(b, errJSON)
}

// EachStepFrame calls fn for each step frame of one row, not decoded yet
// (journal.DecodeStep decodes one); its slices alias the row.
func EachStepFrame(runID string, row []byte, fn func(*journal.StoredStep)) error {
	f := reader{b: row}
	for f.more() {
		var sf journal.StoredStep
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

// ReplaceStep returns a copy of the steps column row with the record of
// every frame of stepID replaced by version and rec as they are (for tests
// that damage a record on purpose); hit reports whether the row held it.
func ReplaceStep(row []byte, stepID string, version int, rec []byte) (out []byte, hit bool, err error) {
	err = EachStepFrame("", row, func(sf *journal.StoredStep) {
		v, r := sf.Version, sf.Rec
		if sf.StepID == stepID {
			hit, v, r = true, uint64(version), rec
		}
		out = binary.AppendUvarint(out, v)
		out = AppendBytes(out, []byte(sf.StepID))
		out = AppendBytes(out, r)
		out = AppendBytes(AppendBytes(AppendBytes(out, sf.Output), sf.Input), sf.Error)
	})
	if err != nil {
		return nil, false, err
	}
	return out, hit, nil
}

// Fold folds a run's step frames, row after row: it keeps the last frame
// of each step, in the order the steps were first written. Only those
// frames need decoding. The frames alias the rows given to Add.
type Fold struct {
	Last  []journal.StoredStep
	index map[string]int
}

// Add folds the step frames of one row of run runID.
func (f *Fold) Add(runID string, row []byte) error {
	if f.index == nil {
		f.index = map[string]int{}
	}
	return EachStepFrame(runID, row, func(sf *journal.StoredStep) {
		if i, ok := f.index[sf.StepID]; ok {
			f.Last[i] = *sf
			return
		}
		f.index[sf.StepID] = len(f.Last)
		f.Last = append(f.Last, *sf)
	})
}

// EncodeStep appends the frame of st, encoding its record in scratch and
// moving an output or input longer than threshold bytes to a blob (none
// when threshold < 0): it returns b and scratch grown, and the encoding
// (whose OutputBlob/InputBlob name the blobs to store).
func EncodeStep(b, scratch []byte, st *journal.Step, threshold int) ([]byte, []byte, journal.EncodedStep) {
	e, scratch := journal.EncodeStep(st, threshold, scratch[:0])
	return AppendStep(b, st.StepID, e.Rec, e.Output, e.Input, e.Error), scratch, e
}
