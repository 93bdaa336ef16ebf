package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDataArg: submit's --data is a JSON text or @FILE; what is not JSON
// is refused with where it breaks, and an absent one says what to give.
func TestDataArg(t *testing.T) {
	file := filepath.Join(t.TempDir(), "out.json")
	if err := os.WriteFile(file, []byte(`{"total": 10}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want, errHas string }{
		{`{"total":10}`, `{"total":10}`, ""},
		{"@" + file, `{"total": 10}`, ""},
		{`{"total":}`, "", "not JSON at byte 10"},
		{"", "", "needs --data"},
		{"@" + file + ".missing", "", "no such file"},
	} {
		got, err := dataArg(c.in)
		if c.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), c.errHas) {
				t.Errorf("dataArg(%q) = %s, %v; want an error with %q", c.in, got, err, c.errHas)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("dataArg(%q) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}
