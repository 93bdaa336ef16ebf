package yamlnode_test

import (
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/reinhq/rein/internal/yamlnode"
)

func body(t *testing.T, src string) ast.Node {
	t.Helper()
	f, err := parser.ParseBytes([]byte(src), 0)
	if err != nil {
		t.Fatal(err)
	}
	return f.Docs[0].Body
}

// value returns the value of key in the mapping n.
func value(t *testing.T, n ast.Node, key string) ast.Node {
	t.Helper()
	values, ok := yamlnode.Entries(n)
	if !ok {
		t.Fatalf("%s is not a mapping", yamlnode.Kind(n))
	}
	for _, mv := range values {
		if s, _ := yamlnode.String(mv.Key); s == key {
			return mv.Value
		}
	}
	t.Fatalf("no key %q", key)
	return nil
}

func TestKindAndString(t *testing.T) {
	t.Parallel()
	root := body(t, `
nothing: ~
map: {a: 1}
list: [1]
plain: hi
quoted: "q"
block: |
  text
int: 3
float: 1.5
inf: .inf
nan: .nan
bool: true
anchored: &x 1
`)
	tests := []struct {
		key, kind, text string
		isString        bool
	}{
		{"nothing", "null", "", false},
		{"map", "a mapping", "", false},
		{"list", "a list", "", false},
		{"plain", "a string", "hi", true},
		{"quoted", "a string", "q", true},
		{"block", "a string", "text\n", true},
		{"int", "a number", "", false},
		{"float", "a number", "", false},
		{"inf", "a number", "", false},
		{"nan", "a number", "", false},
		{"bool", "a boolean", "", false},
		{"anchored", "anchor", "", false},
	}
	for _, tt := range tests {
		n := value(t, root, tt.key)
		if got := yamlnode.Kind(n); got != tt.kind {
			t.Errorf("%s: Kind = %q, want %q", tt.key, got, tt.kind)
		}
		if got, ok := yamlnode.String(n); got != tt.text || ok != tt.isString {
			t.Errorf("%s: String = %q, %v; want %q, %v", tt.key, got, ok, tt.text, tt.isString)
		}
	}
	if got := yamlnode.Kind(nil); got != "null" {
		t.Errorf("Kind(nil) = %q", got)
	}
}

func TestStart(t *testing.T) {
	t.Parallel()
	root := body(t, "top:\n  first: 1\n  second: [a, b]\nflow: {x: 1}\n")
	tests := []struct {
		name      string
		n         ast.Node
		line, col int
	}{
		{"a block mapping starts at its first key", value(t, root, "top"), 2, 3},
		{"a mapping value starts at its key", root.(*ast.MappingNode).Values[1], 4, 1},
		{"a flow mapping starts at its brace", value(t, root, "flow"), 4, 7},
		{"a scalar starts at its token", value(t, value(t, root, "top"), "first"), 2, 10},
		{"nil", nil, 1, 1},
	}
	for _, tt := range tests {
		if line, col := yamlnode.Start(tt.n); line != tt.line || col != tt.col {
			t.Errorf("%s: Start = %d:%d, want %d:%d", tt.name, line, col, tt.line, tt.col)
		}
	}
	if _, ok := yamlnode.Entries(value(t, root, "flow")); !ok {
		t.Error("Entries: a flow mapping is not a mapping")
	}
	if e, ok := yamlnode.Entries(root.(*ast.MappingNode).Values[1]); !ok || len(e) != 1 {
		t.Errorf("Entries of a bare entry = %v, %v; want it alone", e, ok)
	}
	if _, ok := yamlnode.Entries(value(t, value(t, root, "top"), "second")); ok {
		t.Error("Entries: a list is a mapping")
	}
	if line, col := yamlnode.TokenPos(nil); line != 1 || col != 1 {
		t.Errorf("TokenPos(nil) = %d:%d, want 1:1", line, col)
	}
}
