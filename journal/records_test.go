package journal_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/journal/journaltest"
)

// stdJSON is what encoding/json writes for v (HTML left unescaped, as the
// journal's encoders write it).
func stdJSON(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// keysDiff names the JSON keys one object has and the other lacks.
func keysDiff(t *testing.T, got, want []byte) string {
	t.Helper()
	var g, w map[string]any
	if err := json.Unmarshal(got, &g); err != nil {
		return "ours is not a JSON object: " + err.Error()
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range w {
		if _, ok := g[k]; !ok {
			out = append(out, "missing "+k)
		}
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			out = append(out, "extra "+k)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func fill(t *testing.T, ptr any) {
	t.Helper()
	paths, err := journaltest.Fill(ptr)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("Fill set no field")
	}
}

func reportDiff(t *testing.T, what string, want, got any) {
	t.Helper()
	for _, d := range journaltest.Diff(want, got) {
		t.Errorf("%s: %s: the journal's encoder or decoder drops or alters this field", what, d)
	}
}

// Every field of Event, set, is written as encoding/json writes it and
// reads back: a field added to Event that AppendEvent forgets fails here,
// named.
func TestEventEveryField(t *testing.T) {
	t.Parallel()
	var e journal.Event
	fill(t, &e)
	got, want := journal.AppendEvent(nil, &e), stdJSON(t, &e)
	if !bytes.Equal(got, want) {
		t.Errorf("AppendEvent differs from encoding/json (%s)\n got %s\nwant %s", keysDiff(t, got, want), got, want)
	}
	var back journal.Event
	if err := journal.DecodeEvent(got, &back); err != nil {
		t.Fatalf("DecodeEvent: %v", err)
	}
	reportDiff(t, "AppendEvent → DecodeEvent", e, back)

	// As a store reads it: the frame's sequence number and run.
	read, err := journal.ReadEvent(e.RunID, e.Seq, journal.Version, got)
	if err != nil {
		t.Fatalf("ReadEvent: %v", err)
	}
	reportDiff(t, "ReadEvent", e, *read)
}

// Every event kind is written and read back.
func TestEveryKindRoundTrips(t *testing.T) {
	t.Parallel()
	for _, k := range journal.Kinds() {
		e := journal.Event{Seq: 1, Kind: k, RunID: "r"}
		got := journal.AppendEvent(nil, &e)
		if want := stdJSON(t, &e); !bytes.Equal(got, want) {
			t.Errorf("kind %s: got %s, want %s", k, got, want)
		}
		var back journal.Event
		if err := journal.DecodeEvent(got, &back); err != nil || !reflect.DeepEqual(back, e) {
			t.Errorf("kind %s read back as %+v, %v", k, back, err)
		}
	}
}

// Kinds lists every Kind constant that state.go declares.
func TestKindsListsEveryKind(t *testing.T) {
	t.Parallel()
	file, err := parser.ParseFile(token.NewFileSet(), "state.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, d := range file.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Kind" {
				for _, v := range vs.Values {
					declared = append(declared, strings.Trim(v.(*ast.BasicLit).Value, `"`))
				}
			}
		}
	}
	var listed []string
	for _, k := range journal.Kinds() {
		listed = append(listed, string(k))
	}
	slices.Sort(declared)
	slices.Sort(listed)
	if len(declared) < 13 || !slices.Equal(declared, listed) {
		t.Errorf("Kinds() = %v, state.go declares %v", listed, declared)
	}
}

// Every field of the step record is written as encoding/json writes it and
// reads back.
func TestStepRecordEveryField(t *testing.T) {
	t.Parallel()
	var r journal.StepRecord
	fill(t, &r)
	got, want := r.AppendJSON(nil), stdJSON(t, &r)
	if !bytes.Equal(got, want) {
		t.Errorf("StepRecord.AppendJSON differs from encoding/json (%s)\n got %s\nwant %s", keysDiff(t, got, want), got, want)
	}
	var back journal.StepRecord
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	reportDiff(t, "StepRecord", r, back)
}

// Every field of Step, set, goes through EncodeStep and DecodeStep as a
// store stores it: a field added to Step that the step record forgets
// fails here, named.
func TestStepEveryField(t *testing.T) {
	t.Parallel()
	var st journal.Step
	fill(t, &st)
	e, _ := journal.EncodeStep(&st, -1, nil)
	if e.OutputBlob != "" || e.InputBlob != "" {
		t.Fatalf("threshold -1 moved a payload to a blob: %+v", e)
	}
	back, _, err := journal.DecodeStep(st.RunID, &journal.StoredStep{Version: journal.Version, StepID: st.StepID,
		Rec: e.Rec, Output: e.Output, Input: e.Input, Error: e.Error})
	if err != nil {
		t.Fatalf("DecodeStep: %v", err)
	}
	reportDiff(t, "EncodeStep → DecodeStep", st, *back)
	// A step's projection is served as JSON (rein runs show): the same.
	if got, want := stdJSON(t, back), stdJSON(t, &st); !bytes.Equal(got, want) {
		t.Errorf("the decoded step's JSON differs (%s)", keysDiff(t, got, want))
	}
}

// Payloads above the threshold go to blobs, named in the record; read back
// from them, the step is whole again.
func TestStepBlobsEveryField(t *testing.T) {
	t.Parallel()
	var st journal.Step
	fill(t, &st)
	sum := sha256.Sum256(st.Output)
	st.OutputSHA = hex.EncodeToString(sum[:]) // the engine's digest of the output
	e, _ := journal.EncodeStep(&st, 0, nil)
	if e.Output != nil || e.Input != nil || e.OutputData == nil || e.InputData == nil {
		t.Fatalf("threshold 0 kept a payload inline: %+v", e)
	}
	back, rec, err := journal.DecodeStep(st.RunID, &journal.StoredStep{Version: journal.Version, StepID: st.StepID,
		Rec: e.Rec, Output: e.Output, Input: e.Input, Error: e.Error})
	if err != nil {
		t.Fatalf("DecodeStep: %v", err)
	}
	if !rec.OutputBlob || rec.OutputSHA != e.OutputBlob || rec.InputBlob != e.InputBlob {
		t.Fatalf("record %+v does not name the blobs %s, %s", rec, e.OutputBlob, e.InputBlob)
	}
	back.Output, back.Input = e.OutputData, e.InputData // as a store reads the blobs back
	reportDiff(t, "EncodeStep → blobs → DecodeStep", st, *back)
}

// Records of a newer version are refused with an error that names the
// run and the record and says to upgrade rein; damaged ones are not
// mistaken for newer.
func TestVersionRefused(t *testing.T) {
	t.Parallel()
	data := journal.AppendEvent(nil, &journal.Event{Seq: 7, Kind: journal.StepStarted})
	_, err := journal.ReadEvent("run-1", 7, journal.Version+1, data)
	var ve *journal.VersionError
	if !errors.As(err, &ve) || !ve.Newer() {
		t.Fatalf("newer event record: err = %v, want a newer *VersionError", err)
	}
	for _, want := range []string{"run run-1", "seq 7", "newer rein", "upgrade rein"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	_, _, err = journal.DecodeStep("run-1", &journal.StoredStep{Version: journal.Version + 1, StepID: "a", Rec: []byte(`{"step_id":"a"}`)})
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "run run-1 step a") || !strings.Contains(err.Error(), "upgrade rein") {
		t.Errorf("newer step record: err = %v", err)
	}
	_, err = journal.ReadEvent("run-1", 7, 0, data)
	if !errors.As(err, &ve) || ve.Newer() || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("record without a version: err = %v", err)
	}
	if _, err := journal.ReadEvent("run-1", 7, journal.Version, []byte(`{"seq":7,`)); err == nil ||
		!strings.Contains(err.Error(), "run run-1 seq 7") || errors.As(err, &ve) {
		t.Errorf("a record that does not decode: err = %v", err)
	}
	if _, err := journal.ReadEvent("run-1", 7, journal.Version, []byte(`{"seq":8}`)); err == nil || !strings.Contains(err.Error(), "says seq 8") {
		t.Errorf("a record naming another seq: err = %v", err)
	}
	if _, _, err := journal.DecodeStep("r", &journal.StoredStep{Version: journal.Version, StepID: "a", Rec: []byte(`{"step_id":"b"}`)}); err == nil {
		t.Error("a step record naming another step decoded")
	}
}

// A stored event without its sequence number or run gets the frame's.
func TestReadEventFillsSeqAndRun(t *testing.T) {
	t.Parallel()
	e, err := journal.ReadEvent("r", 4, journal.Version, []byte(`{"kind":"run_started"}`))
	if err != nil || e.Seq != 4 || e.RunID != "r" || e.Kind != journal.RunStarted {
		t.Errorf("ReadEvent = %+v, %v", e, err)
	}
}

// Every field of the risk records (TierChange, Review) is encoded and
// read back.
func TestRiskRecordsEveryField(t *testing.T) {
	t.Parallel()
	var c journal.TierChange
	fill(t, &c)
	back, err := journal.DecodeTierChange(c.Encode())
	if err != nil {
		t.Fatal(err)
	}
	reportDiff(t, "TierChange", c, *back)
	var r journal.Review
	fill(t, &r)
	rback, err := journal.DecodeReview(r.Encode())
	if err != nil {
		t.Fatal(err)
	}
	reportDiff(t, "Review", r, *rback)
}

// Every field of the effect and remediation records, set, goes through the
// event's Data and back: a field added to either that the encoding drops
// fails here, named.
func TestEffectRecordsEveryField(t *testing.T) {
	t.Parallel()
	var eff journal.Effect
	fill(t, &eff)
	data, err := journal.EncodeEffect(&eff)
	if err != nil {
		t.Fatal(err)
	}
	if want := stdJSON(t, &eff); data != string(want) {
		t.Errorf("EncodeEffect differs from encoding/json (%s)", keysDiff(t, []byte(data), want))
	}
	ev := journal.Event{Seq: 3, Kind: journal.CallEffect, RunID: "r", Data: data}
	read, err := journal.ReadEvent("r", 3, journal.Version, journal.AppendEvent(nil, &ev))
	if err != nil {
		t.Fatal(err)
	}
	back, err := journal.DecodeEffect(read)
	if err != nil {
		t.Fatal(err)
	}
	reportDiff(t, "EncodeEffect → DecodeEffect", eff, *back)

	var m journal.Remediation
	fill(t, &m)
	data, err = journal.EncodeRemediation(&m)
	if err != nil {
		t.Fatal(err)
	}
	ev = journal.Event{Seq: 4, Kind: journal.Remediated, RunID: "r", Data: data}
	read, err = journal.ReadEvent("r", 4, journal.Version, journal.AppendEvent(nil, &ev))
	if err != nil {
		t.Fatal(err)
	}
	mback, err := journal.DecodeRemediation(read)
	if err != nil {
		t.Fatal(err)
	}
	reportDiff(t, "EncodeRemediation → DecodeRemediation", m, *mback)

	if _, err := journal.DecodeEffect(&journal.Event{RunID: "r", Seq: 9, Data: "{"}); err == nil || !strings.Contains(err.Error(), "run r seq 9") {
		t.Errorf("a damaged effect record: err = %v", err)
	}
}
