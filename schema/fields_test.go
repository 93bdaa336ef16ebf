package schema

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"
)

// loaderFields reads the field lists (flowFields, stepFields, …) from the
// loader's source in ../flow, so a field added there without the schema
// (or the other way round) fails this test.
func loaderFields(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("../flow/*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatalf("read the loader's field lists: %v", err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					break
				}
				lit, ok := vs.Values[i].(*ast.CompositeLit)
				if !ok {
					continue
				}
				var list []string
				for _, e := range lit.Elts {
					if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
						s, err := strconv.Unquote(b.Value)
						if err == nil {
							list = append(list, s)
						}
					}
				}
				out[name.Name] = list
			}
			return true
		})
	}
	return out
}

// properties returns the sorted property names at the JSON pointer-ish path
// of keys into doc.
func properties(t *testing.T, doc map[string]any, path ...string) []string {
	t.Helper()
	cur := doc
	for _, k := range path {
		next, ok := cur[k].(map[string]any)
		if !ok {
			t.Fatalf("schema has no %v", path)
		}
		cur = next
	}
	props, ok := cur["properties"].(map[string]any)
	if !ok {
		t.Fatalf("schema %v has no properties", path)
	}
	if cur["additionalProperties"] != false {
		t.Errorf("schema %v allows unknown fields; the loader rejects them: set additionalProperties: false", path)
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func TestFieldsMatchLoader(t *testing.T) {
	t.Parallel()
	loader := loaderFields(t)
	var doc map[string]any
	if err := json.Unmarshal(Flow(), &doc); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		list string   // the loader's variable
		path []string // where the schema lists them
	}{
		{"flowFields", nil},
		{"stepFields", []string{"$defs", "step"}},
		{"budgetFields", []string{"properties", "budgets"}},
		{"backoffFields", []string{"$defs", "step", "properties", "backoff"}},
		{"repeatFields", []string{"$defs", "step", "properties", "repeat"}},
		{"fallbackFields", []string{"$defs", "step", "properties", "fallback"}},
		{"toolFields", []string{"$defs", "tool"}},
	}
	for _, tc := range tests {
		t.Run(tc.list, func(t *testing.T) {
			t.Parallel()
			want, ok := loader[tc.list]
			if !ok {
				t.Fatalf("flow/ has no %s any more: point this test at the loader's new field list", tc.list)
			}
			want = slices.Clone(want)
			sort.Strings(want)
			got := properties(t, doc, tc.path...)
			if !slices.Equal(got, want) {
				t.Errorf("schema fields %v\nloader fields %v", got, want)
			}
		})
	}
}
