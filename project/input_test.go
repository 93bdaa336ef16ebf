package project_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/project"
)

func TestParseInput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want, err string
	}{
		{in: `{"a": 1}`, want: "map[a:1]"},
		{in: "\ufeff{\"a\": 1}", want: "map[a:1]"},
		{in: `[1, 2]`, want: "[1 2]"},
		{in: `{"a": 1} {"b": 2}`, err: "input f.json holds more than one JSON value"},
		{in: "{\n  \"a\": 1,\n  oops\n}", err: "input f.json is not JSON: line 3 col 3: invalid character 'o'"},
		{in: ``, err: "input f.json is not JSON: EOF"},
	} {
		v, err := project.ParseInput([]byte(c.in), "f.json")
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("%q: error %v, want one starting %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := strings.TrimSpace(fmtValue(v)); got != c.want {
			t.Errorf("%q: %s, want %s", c.in, got, c.want)
		}
	}
}

func FuzzParseInput(f *testing.F) {
	for _, s := range []string{`{"a": 1}`, "\ufeff[1]", "{\n oops", `1 2`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := project.ParseInput(data, "fuzz")
		if err == nil && v == nil && strings.TrimSpace(strings.TrimPrefix(string(data), "\ufeff")) != "null" {
			t.Fatalf("%q: no value and no error", data)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "input fuzz ") {
			t.Fatalf("%q: error %q does not say where the input came from", data, err)
		}
	})
}

func fmtValue(v any) string { return fmt.Sprint(v) }
