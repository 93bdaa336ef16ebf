package jsonl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/trace"
)

func TestCreateAndReadFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "run.jsonl")
	if err := os.WriteFile(path, []byte("old content that must go\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	in := []trace.Event{fullEvent("a"), fullEvent("b")}
	for i := range in {
		s.Emit(context.Background(), &in[i])
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	out, err := ReadFile(path)
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	if len(out) != 2 || !reflect.DeepEqual(out[0], in[0]) || !reflect.DeepEqual(out[1], in[1]) {
		t.Fatalf("ReadFile = %+v, want %+v", out, in)
	}
	if _, err := Create(filepath.Join(t.TempDir(), "missing", "x.jsonl")); err == nil {
		t.Fatal("Create in a missing directory succeeded")
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadFile of a missing file: %v, want ErrNotExist", err)
	}
}

func TestRead(t *testing.T) {
	t.Parallel()
	good := `{"seq":1,"time":"2026-03-14T09:26:53Z","kind":"run_started","run_id":"r"}`
	tests := []struct {
		name    string
		in      string
		n       int    // events returned
		errLine int    // 0: no error
		errText string // substring of the error
	}{
		{"empty", "", 0, 0, ""},
		{"blank lines and CRLF ignored", "\n" + good + "\r\n\n  \t\n" + good + "\n", 2, 0, ""},
		{"no final newline", good, 1, 0, ""},
		{"unknown fields ignored", `{"seq":1,"kind":"x","run_id":"r","future":{"a":[1]}}`, 1, 0, ""},
		{"bad JSON names its line", good + "\n\n{\"seq\":\n" + good, 1, 3, "line 3: unexpected end of JSON input"},
		{"wrong type", good + "\n" + `{"seq":"one"}`, 1, 2, "line 2: json: cannot unmarshal"},
		{"not an object", `[1,2]`, 0, 1, "line 1: not a JSON object"},
		{"trailing garbage", good + " x", 0, 1, "line 1: invalid character"},
		{"bad time", `{"seq":1,"time":"yesterday","kind":"x","run_id":"r"}`, 0, 1, "line 1:"},
		{"line too long", good + "\n" + `{"preview":"` + strings.Repeat("a", MaxLineBytes) + `"}`, 1, 2, "longer than"},
		{"line just under the limit", `{"preview":"` + strings.Repeat("a", MaxLineBytes-20) + `"}`, 1, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			events, err := Read(strings.NewReader(tt.in))
			if len(events) != tt.n {
				t.Errorf("got %d events, want %d", len(events), tt.n)
			}
			if tt.errLine == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("error %v is not a *LineError", err)
			}
			if le.Line != tt.errLine || !strings.Contains(err.Error(), tt.errText) {
				t.Fatalf("error %q (line %d), want line %d containing %q", err, le.Line, tt.errLine, tt.errText)
			}
		})
	}
}

func TestReadFileErrorNamesPath(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(path, []byte("\n\nnope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path)
	if want := path + ":3: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %v, want prefix %q", err, want)
	}
}
