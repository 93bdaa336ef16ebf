package journaltest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

type inner struct {
	N  int
	At time.Time
}

type record struct {
	S     string
	I     int64
	U     uint8
	F     float64
	B     bool
	Raw   json.RawMessage
	T     time.Time
	In    inner
	P     *inner
	Items []inner
}

// Fill sets every field, each to a value of its own; Diff names a field
// that differs by its path.
func TestFillAndDiff(t *testing.T) {
	t.Parallel()
	var r record
	paths, err := Fill(&r)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"record.S", "record.I", "record.U", "record.F", "record.B", "record.Raw", "record.T",
		"record.In.N", "record.In.At", "record.P.N", "record.P.At", "record.Items[0].N", "record.Items[0].At"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("paths = %q, want %q", paths, want)
	}
	if r.S == "" || r.I == 0 || r.U == 0 || r.F == 0 || !r.B || !json.Valid(r.Raw) || r.T.IsZero() ||
		r.In.N == 0 || r.P == nil || r.P.N == 0 || len(r.Items) != 1 || r.Items[0].At.IsZero() {
		t.Errorf("a field was left zero: %+v", r)
	}
	if r.In.N == r.P.N || r.T.Equal(r.In.At) || r.I == int64(r.In.N) {
		t.Errorf("two fields got the same value: %+v", r)
	}
	if d := Diff(r, r); len(d) != 0 {
		t.Errorf("Diff of a record with itself = %q", d)
	}
	got := r
	got.P = &inner{N: r.P.N, At: r.P.At.In(time.FixedZone("X", 3600))}
	got.Items = []inner{{N: 0, At: r.Items[0].At}}
	d := Diff(r, got)
	if len(d) != 2 || !strings.HasPrefix(d[0], "record.P.At:") || !strings.HasPrefix(d[1], "record.Items:") {
		t.Errorf("Diff = %q, want record.P.At (another location) and record.Items", d)
	}
}

// Fill refuses a field it cannot fill, naming it.
func TestFillRefusesUnknownKinds(t *testing.T) {
	t.Parallel()
	var withChan struct{ C chan int }
	if _, err := Fill(&withChan); err == nil || !strings.Contains(err.Error(), ".C is of kind chan") {
		t.Errorf("a chan field: err = %v", err)
	}
	var unexported struct{ x int }
	if _, err := Fill(&unexported); err == nil || !strings.Contains(err.Error(), ".x is unexported") {
		t.Errorf("an unexported field: err = %v (%v)", err, unexported.x)
	}
	if _, err := Fill(record{}); err == nil {
		t.Error("Fill of a non-pointer succeeded")
	}
}
