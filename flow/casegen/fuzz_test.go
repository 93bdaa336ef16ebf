package casegen_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/reinhq/rein/flow/casegen"
	"github.com/reinhq/rein/value/schema"
)

// FuzzGenerate: whatever schema a flow holds, generation ends, makes at
// most MaxCases cases, gives every case a JSON value, and is the same
// twice; a case Check disagrees with says so (Skip) instead of passing as
// what it was meant to be.
func FuzzGenerate(f *testing.F) {
	f.Add([]byte(charge))
	f.Add([]byte(`{"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}`))
	f.Add([]byte(`{"type": "string", "pattern": "^(a|b){3,5}[0-9]*\\d+$", "maxLength": 4}`))
	f.Add([]byte(`{"type": ["integer", "null"], "exclusiveMaximum": 3, "multipleOf": 2}`))
	f.Add([]byte(`{"allOf": [{"type": "object", "properties": {"x": {"enum": [1, {"a": 1}, "rein-test-not-in-enum"]}}}, {"required": ["x"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 16<<10 {
			return
		}
		var doc any
		dec := json.NewDecoder(bytes.NewReader(data))
		if dec.Decode(&doc) != nil {
			return
		}
		sch, err := schema.Compile("fuzz", doc)
		if err != nil {
			return
		}
		opts := casegen.Options{Prefix: "input", Check: sch.Validate, MaxCases: 32}
		a, err := casegen.Generate(doc, opts)
		if err != nil {
			return
		}
		if len(a.Cases) > 32 || len(a.Cases) == 0 || a.Cases[0].Name != "input/minimal" {
			t.Fatalf("%d cases, first %q", len(a.Cases), a.Cases[0].Name)
		}
		for _, c := range a.Cases {
			if _, err := json.Marshal(c.Value); err != nil {
				t.Fatalf("%s: value is not JSON: %v", c.Name, err)
			}
			if c.Skip == "" && (sch.Validate(c.Value) == nil) != c.Valid {
				t.Fatalf("%s: meant valid=%v, and Check disagrees without a Skip", c.Name, c.Valid)
			}
		}
		b, _ := casegen.Generate(doc, opts)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Fatal("two generations of one schema differ")
		}
	})
}
