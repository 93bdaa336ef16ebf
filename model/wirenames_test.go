package model_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/model"
)

func TestWireNames(t *testing.T) {
	t.Parallel()
	long := "crm." + strings.Repeat("x", 70)
	for _, c := range []struct {
		name  string
		names []string
		want  []string
	}{
		{"valid names are kept", []string{"lookup", "execute_plan"}, []string{"lookup", "execute_plan"}},
		{"a dot becomes __", []string{"crm.find_customer", "lookup"}, []string{"crm__find_customer", "lookup"}},
		{"other characters become _", []string{"files.read/all é"}, []string{"files__read_all__"}},
		// crm__find is a tool's own name, so crm.find gets a hash suffix.
		{"a taken name gets a hash", []string{"crm.find", "crm__find"}, []string{"crm__find_e5b4c3be", "crm__find"}},
		{"a long name is cut with a hash", []string{long}, []string{"crm__" + strings.Repeat("x", 50) + "_" + "a1a6fd4d"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := model.WireNames(c.names)
			for i, w := range got {
				if !model.ValidToolName(w) {
					t.Errorf("%q -> %q, which providers refuse", c.names[i], w)
				}
			}
			if strings.HasSuffix(c.name, "hash") {
				// the hash is the name's: check the shape, then stability.
				for i := range got {
					if len(got[i]) != len(c.want[i]) || got[i][:len(got[i])-8] != c.want[i][:len(c.want[i])-8] {
						t.Errorf("%q -> %q, want the shape of %q", c.names[i], got[i], c.want[i])
					}
				}
			} else if !slices.Equal(got, c.want) {
				t.Errorf("WireNames(%q) = %q, want %q", c.names, got, c.want)
			}
			// the names' order does not change their wire names.
			rev := slices.Clone(c.names)
			slices.Reverse(rev)
			back := model.WireNames(rev)
			slices.Reverse(back)
			if !slices.Equal(back, got) {
				t.Errorf("reversed input: %q, want %q", back, got)
			}
		})
	}
	// distinct names that sanitise alike stay distinct.
	got := model.WireNames([]string{"a.b", "a/b.", "a_b", "a__b"})
	seen := map[string]bool{}
	for _, w := range got {
		if seen[w] || len(w) > 64 {
			t.Fatalf("WireNames gave %q", got)
		}
		seen[w] = true
	}
}
