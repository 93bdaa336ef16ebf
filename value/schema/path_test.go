package schema_test

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/reinhq/rein/value/schema"
)

func doc(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// walk follows path ("a.b[2].c") and reports where it stopped.
func walk(t *testing.T, d any, path string) (schema.At, *schema.Undeclared, int) {
	t.Helper()
	at := schema.Root(d)
	var steps []string
	for _, p := range strings.Split(path, ".") {
		key, rest, _ := strings.Cut(p, "[")
		if key != "" {
			steps = append(steps, key)
		}
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			steps = append(steps, "["+idx)
			rest = strings.TrimPrefix(after, "[")
		}
	}
	for i, s := range steps {
		var miss *schema.Undeclared
		if n, ok := strings.CutPrefix(s, "["); ok {
			i, err := strconv.Atoi(n)
			if err != nil {
				t.Fatal(err)
			}
			at, miss = at.Item(i)
		} else {
			at, miss = at.Field(s)
		}
		if miss != nil {
			return at, miss, i
		}
	}
	return at, nil, -1
}

func TestAt(t *testing.T) {
	t.Parallel()
	person := `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}}}`
	tests := []struct {
		name, schema, path string
		open               bool
		types              schema.Type
		miss               *schema.Undeclared // nil: declared
		missAt             int
	}{
		{"a property", person, "name", false, schema.String, nil, 0},
		{"an item", person, "tags[3]", false, schema.String, nil, 0},
		{"an unknown property", person, "nmae", false, 0, &schema.Undeclared{Fields: []string{"age", "name", "tags"}}, 0},
		{"a field of a string", person, "name.first", false, 0, &schema.Undeclared{Types: []schema.Type{schema.String}}, 1},
		{"an item of an object", person, "age[0]", false, 0, &schema.Undeclared{Types: []schema.Type{schema.Integer}}, 1},
		{"no properties listed", `{"type":"object"}`, "x.y", true, 0, nil, 0},
		{"no type at all", `{}`, "x[1].y", true, 0, nil, 0},
		{"true", `true`, "x", true, 0, nil, 0},
		{"additionalProperties", `{"properties":{},"additionalProperties":{"type":"number"}}`, "x", false, schema.Number, nil, 0},
		{"additionalProperties false", `{"properties":{"a":{}},"additionalProperties":false}`, "b", false, 0, &schema.Undeclared{Fields: []string{"a"}}, 0},
		{"patternProperties", `{"properties":{},"patternProperties":{"^x":{}}}`, "xy", true, 0, nil, 0},
		{"prefixItems", `{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}],"items":false}`, "[1]", false, schema.Number, nil, 0},
		{"past prefixItems, items false", `{"type":"array","prefixItems":[{"type":"string"}],"items":false}`, "[1]", false, 0, &schema.Undeclared{}, 0},
		{"local $ref", `{"$defs":{"p":` + person + `},"$ref":"#/$defs/p"}`, "age", false, schema.Integer, nil, 0},
		{"local $ref, unknown field", `{"$defs":{"p":` + person + `},"$ref":"#/$defs/p"}`, "agee", false, 0, &schema.Undeclared{Fields: []string{"age", "name", "tags"}}, 0},
		{"escaped $ref", `{"$defs":{"a/b~c":{"type":"boolean"}},"properties":{"x":{"$ref":"#/$defs/a~1b~0c"}}}`, "x", false, schema.Boolean, nil, 0},
		{"remote $ref", `{"$ref":"https://example.com/s.json"}`, "x", true, 0, nil, 0},
		{"allOf beside type object", `{"type":"object","allOf":[{"properties":{"name":{}}},{"properties":{"age":{}}}]}`, "agee", false, 0, &schema.Undeclared{Fields: []string{"age", "name"}}, 0},
		{"anyOf types", `{"properties":{"x":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`, "x", false, schema.String | schema.Null, nil, 0},
		{"$ref beside a type that rules fields out", `{"$defs":{"s":{"properties":{"a":{}}}},"type":"string","$ref":"#/$defs/s"}`, "x", false, 0, &schema.Undeclared{Fields: []string{"a"}, Types: []schema.Type{schema.String}}, 0},
		{"cycle", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, "x", true, 0, nil, 0},
		{"a type list", `{"properties":{"x":{"type":["string","null"]}}}`, "x", false, schema.String | schema.Null, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			at, miss, i := walk(t, doc(t, tt.schema), tt.path)
			if !reflect.DeepEqual(miss, tt.miss) {
				t.Fatalf("Undeclared %+v, want %+v", miss, tt.miss)
			}
			if miss != nil {
				if i != tt.missAt {
					t.Errorf("undeclared at step %d, want %d", i, tt.missAt)
				}
				return
			}
			if at.Open() != tt.open || at.Types() != tt.types {
				t.Errorf("open %v, types %q; want %v, %q", at.Open(), at.Types(), tt.open, tt.types)
			}
		})
	}
}

func TestTypeOfAndString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ  any
		want schema.Type
		name string
	}{
		{"string", schema.String, "a string"},
		{[]any{"integer", "null", 3, "nope"}, schema.Integer | schema.Null, "an integer or null"},
		{"nope", 0, ""},
		{nil, 0, ""},
		{[]any{"object", "array", "boolean", "number"}, schema.Object | schema.Array | schema.Boolean | schema.Number, "a number or a boolean or an object or a list"},
	}
	for _, tt := range tests {
		got := schema.TypeOf(map[string]any{"type": tt.typ})
		if got != tt.want || got.String() != tt.name {
			t.Errorf("TypeOf(%v) = %d %q, want %d %q", tt.typ, got, got, tt.want, tt.name)
		}
	}
}

func TestRootOfWholeDocument(t *testing.T) {
	t.Parallel()
	if got := schema.Root(doc(t, `{"type":"array"}`)).Types(); got != schema.Array {
		t.Errorf("Types() = %q, want a list", got)
	}
	var zero schema.At
	if at, miss := zero.Field("x"); miss != nil || !at.Open() {
		t.Errorf("zero At: Field = %+v, %+v; want open", at, miss)
	}
}
