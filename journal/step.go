package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/reinhq/rein/value"
)

// Step is a step's record: what a transition sets for one step, and the
// step projection a store reads back (the last record of each step).
type Step struct {
	RunID  string     `json:"run_id"`
	StepID string     `json:"step_id"`
	Type   string     `json:"type,omitempty"`
	Status StepStatus `json:"status"`
	// Attempt is the number of the attempt last started (1-based); a step
	// found running after a crash was in flight with this attempt.
	Attempt int `json:"attempt"`
	// Output is the step's output as canonical JSON, when it settled with
	// one. The backend moves outputs larger than its blob threshold to the
	// blob table (OutputSHA names them) and reads them back in Steps.
	Output    json.RawMessage `json:"output,omitempty"`
	OutputSHA string          `json:"output_sha256,omitempty"`
	// Input is what the step ran with (rendered prompt or tool args), for
	// `rein runs show` and approvals.
	Input json.RawMessage `json:"input,omitempty"`
	// Idempotent records whether a re-run after a crash is safe.
	Idempotent bool            `json:"idempotent,omitempty"`
	Error      json.RawMessage `json:"error,omitempty"`
	StartedAt  time.Time       `json:"started_at,omitzero"`
	SettledAt  time.Time       `json:"settled_at,omitzero"`
}

// StepRecord is the JSON part of a stored step: the Step without its run
// (the row names it) and without its payloads (Output, Input, Error), which
// are stored beside it as the bytes the engine gave, so they round-trip
// exactly and cost no re-encoding. Times are unix nanoseconds (0: none).
type StepRecord struct {
	StepID     string     `json:"step_id"`
	Type       string     `json:"type,omitempty"`
	Status     StepStatus `json:"status"`
	Attempt    int        `json:"attempt,omitempty"`
	OutputSHA  string     `json:"output_sha256,omitempty"`
	OutputBlob bool       `json:"output_blob,omitempty"` // the output is the blob OutputSHA
	InputBlob  string     `json:"input_blob,omitempty"`  // the input is this blob
	Idempotent bool       `json:"idempotent,omitempty"`
	StartedAt  int64      `json:"started_at,omitempty"`
	SettledAt  int64      `json:"settled_at,omitempty"`
}

// AppendJSON appends r as the JSON encoding/json writes for it (with
// SetEscapeHTML(false)); step records are on the hot path of every commit.
func (r *StepRecord) AppendJSON(b []byte) []byte {
	b = append(b, `{"step_id":`...)
	b = value.AppendString(b, r.StepID)
	b = appendStringField(b, `,"type":`, r.Type)
	b = value.AppendString(append(b, `,"status":`...), string(r.Status))
	b = appendIntField(b, `,"attempt":`, int64(r.Attempt))
	b = appendStringField(b, `,"output_sha256":`, r.OutputSHA)
	if r.OutputBlob {
		b = append(b, `,"output_blob":true`...)
	}
	b = appendStringField(b, `,"input_blob":`, r.InputBlob)
	if r.Idempotent {
		b = append(b, `,"idempotent":true`...)
	}
	b = appendIntField(b, `,"started_at":`, r.StartedAt)
	b = appendIntField(b, `,"settled_at":`, r.SettledAt)
	return append(b, '}')
}

// EncodedStep is a Step ready to store: its record's JSON and its payloads,
// the large ones split off into blobs.
type EncodedStep struct {
	Rec                   []byte // the StepRecord JSON
	Output, Input         []byte // inline payloads (nil when in blobs)
	Error                 []byte
	OutputBlob, InputBlob string // sha256 of a payload that goes to blobs
	OutputData, InputData []byte // those payloads
}

// EncodeStep encodes st's record into buf, moving an output or input
// longer than threshold bytes to a blob (none when threshold < 0). It
// returns the encoding and buf grown by the record. DecodeStep reads it
// back.
func EncodeStep(st *Step, threshold int, buf []byte) (EncodedStep, []byte) {
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

// StoredStep is a step as a store holds it: the record's version, the step
// ID stored beside the record, the record's JSON and the payloads.
type StoredStep struct {
	Version                   uint64
	StepID                    string
	Rec, Output, Input, Error []byte
}

// DecodeStep reads a stored step of run runID: a *VersionError for a
// record this binary cannot read, an error naming the run and the step for
// one that does not decode. The Step's payloads alias s's (an empty one is
// nil); when the record says a payload is a blob (rec.OutputBlob,
// rec.InputBlob), the caller reads it.
func DecodeStep(runID string, s *StoredStep) (st *Step, rec StepRecord, err error) {
	if err := CheckVersion(runID, "step "+s.StepID, s.Version); err != nil {
		return nil, rec, err
	}
	if err := json.Unmarshal(s.Rec, &rec); err != nil {
		return nil, rec, fmt.Errorf("run %s step %s: step record does not decode (%w): the database is damaged", runID, s.StepID, err)
	}
	if rec.StepID != s.StepID {
		return nil, rec, fmt.Errorf("run %s step %s: step record says step %q: the database is damaged", runID, s.StepID, rec.StepID)
	}
	return &Step{RunID: runID, StepID: rec.StepID, Type: rec.Type, Status: rec.Status, Attempt: rec.Attempt,
		Output: nilIfEmpty(s.Output), OutputSHA: rec.OutputSHA, Input: nilIfEmpty(s.Input), Idempotent: rec.Idempotent,
		Error: nilIfEmpty(s.Error), StartedAt: TimeOf(rec.StartedAt), SettledAt: TimeOf(rec.SettledAt)}, rec, nil
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

// TimeOf is the time of a record's unix nanoseconds (zero for 0), in UTC.
func TimeOf(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
