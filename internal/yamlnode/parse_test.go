package yamlnode_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/yamlnode"
)

// TestParseLimits checks that each bound is reported at its place, on
// inputs that took go-yaml's parser minutes and gigabytes.
func TestParseLimits(t *testing.T) {
	t.Parallel()
	var keys strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&keys, "k%d: 1\n", i)
	}
	var block strings.Builder
	for i := range 200 {
		fmt.Fprintf(&block, "%sa:\n", strings.Repeat(" ", i))
	}
	tests := []struct {
		name, src string
		lim       yamlnode.Limits
		line, col int
		want      string
	}{
		{"flow depth", strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000), yamlnode.Limits{}, 1, 128, "nests more than 128 levels"},
		{"block depth", block.String(), yamlnode.Limits{What: "a flow file"}, 129, 129, "a flow file nests more than 128 levels"},
		{"sequence depth", strings.Repeat("- ", 100_000) + "x", yamlnode.Limits{}, 1, 257, "nests more than 128"},
		{"documents", strings.Repeat("---\na: 1\n", 100_000), yamlnode.Limits{}, 33, 1, "more than 16 YAML documents"},
		{"mapping entries", keys.String(), yamlnode.Limits{}, 10_001, 1, "more than 10000 entries"},
		{"size", "a: 12345", yamlnode.Limits{What: "rein.yaml", MaxBytes: 4}, 1, 1, "rein.yaml is 8 bytes, more than the 4"},
		{"nul", "a: 1\nb: x\x00", yamlnode.Limits{}, 2, 5, "NUL byte"},
		{"invalid utf-8", "a: 1\nbé: \xff", yamlnode.Limits{}, 2, 5, "not valid UTF-8 here (byte 0xff)"},
		{"anchor", "a: &x 1\nb: *x\n", yamlnode.Limits{What: "a script", NoAnchors: true}, 1, 4, "anchors (&name) and aliases (*name) are not supported in a script"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := yamlnode.Parse([]byte(tc.src), tc.lim)
			var le *yamlnode.LimitError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want a *LimitError", err)
			}
			if le.Line != tc.line || le.Col != tc.col || !strings.Contains(le.Message, tc.want) {
				t.Fatalf("got %d:%d %q, want %d:%d containing %q", le.Line, le.Col, le.Message, tc.line, tc.col, tc.want)
			}
		})
	}
}

// TestParseAccepts checks that ordinary files, a BOM and nesting, documents
// and mappings within the bounds pass.
func TestParseAccepts(t *testing.T) {
	t.Parallel()
	var keys strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&keys, "k%d: 1\n", i)
	}
	for name, src := range map[string]string{
		"bom":       "\xEF\xBB\xBFname: x\nsteps:\n  - id: a\n",
		"depth":     strings.Repeat("[", 100) + strings.Repeat("]", 100),
		"documents": strings.Repeat("---\na: 1\n", 16),
		"mapping":   keys.String(),
		"anchors":   "a: &x 1\nb: *x\n",
		"unicode":   "name: Grüße 日本\n",
		"siblings":  "a:\n  b:\n    c: 1\n  d:\n    - e: 1\n      f: [1, {g: 2}]\n    - - x\n      - y\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, err := yamlnode.Parse([]byte(src), yamlnode.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Docs) == 0 || f.Docs[0].Body == nil {
				t.Fatal("no document")
			}
		})
	}
	f, _ := yamlnode.Parse([]byte("\xEF\xBB\xBFname: x\n"), yamlnode.Limits{})
	if line, col := yamlnode.Start(f.Docs[0].Body); line != 1 || col != 1 {
		t.Fatalf("after a BOM the body starts at %d:%d, want 1:1", line, col)
	}
}

// FuzzParse checks that Parse never panics and that a bound it reports is
// located.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"a: 1", "[[[]]]", "- - - x", "---\n---\n", "a: &x 1\nb: *x", "\xEF\xBB\xBFa: 1", "a:\n  b:\n c: 1", "{a: [b, {c: d}]}"} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, noAnchors bool) {
		_, err := yamlnode.Parse(data, yamlnode.Limits{MaxBytes: 1 << 16, NoAnchors: noAnchors})
		var le *yamlnode.LimitError
		if errors.As(err, &le) && (le.Line < 1 || le.Col < 1 || le.Message == "") {
			t.Fatalf("limit error not located: %+v", le)
		}
	})
}
