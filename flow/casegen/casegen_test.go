package casegen_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow/casegen"
	"github.com/reinhq/rein/value/schema"
)

// generate compiles the schema text and generates its cases, each checked
// by the compiled schema.
func generate(t *testing.T, text string, base any) *casegen.Result {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	sch, err := schema.Compile("test", doc)
	if err != nil {
		t.Fatal(err)
	}
	res, err := casegen.Generate(doc, casegen.Options{Prefix: "input", Base: base, Check: sch.Validate})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func byName(res *casegen.Result) map[string]casegen.Case {
	out := map[string]casegen.Case{}
	for _, c := range res.Cases {
		out[c.Name] = c
	}
	return out
}

const charge = `{
  "type": "object",
  "properties": {
    "order": {"type": "string", "pattern": "^[A-Z]-[0-9]+$"},
    "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 10000},
    "currency": {"enum": ["EUR", "USD"]},
    "note": {"type": "string", "minLength": 2, "maxLength": 5},
    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
    "customer": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}}, "required": ["id"], "additionalProperties": false}
  },
  "required": ["order", "amount", "customer"],
  "additionalProperties": false
}`

func TestGenerateCases(t *testing.T) {
	res := generate(t, charge, nil)
	cases := byName(res)
	want := map[string]struct {
		valid bool
		ptr   string
		value any // the value at ptr; nil: not compared
	}{
		"input/minimal":                                        {true, "", nil},
		"input: wrong type":                                    {false, "", nil},
		"input/-amount (missing)":                              {false, "/amount", nil},
		"input/amount: wrong type":                             {false, "/amount", "wrong type"},
		"input/amount=maximum":                                 {true, "/amount", 10000.0},
		"input/amount>maximum":                                 {false, "/amount", 10001.0},
		"input/amount=exclusiveMinimum":                        {false, "/amount", 0.0},
		"input/amount>exclusiveMinimum":                        {true, "/amount", 0.01},
		"input/currency=\"USD\"":                               {true, "/currency", "USD"},
		"input/currency: not in enum":                          {false, "/currency", nil},
		"input/note=minLength":                                 {true, "/note", "xx"},
		"input/note<minLength":                                 {false, "/note", "x"},
		"input/note=maxLength":                                 {true, "/note", "xxxxx"},
		"input/note>maxLength":                                 {false, "/note", "xxxxxx"},
		"input/order: breaks pattern":                          {false, "/order", "!"},
		"input/tags=maxItems":                                  {true, "/tags", nil},
		"input/tags>maxItems":                                  {false, "/tags", nil},
		"input/customer/-id (missing)":                         {false, "/customer/id", nil},
		"input/customer/id<minimum":                            {false, "/customer/id", 0.0},
		"input/customer/rein_test_extra (additional property)": {false, "/customer/rein_test_extra", nil},
		"input/rein_test_extra (additional property)":          {false, "/rein_test_extra", nil},
	}
	for name, w := range want {
		c, ok := cases[name]
		if !ok {
			t.Errorf("no case %q", name)
			continue
		}
		if c.Valid != w.valid || c.Pointer != w.ptr || c.Skip != "" {
			t.Errorf("%s: valid=%v pointer=%q skip=%q, want valid=%v pointer=%q", name, c.Valid, c.Pointer, c.Skip, w.valid, w.ptr)
		}
		if w.value != nil {
			got := lookup(c.Value, c.Pointer)
			if b1, _ := json.Marshal(got); string(b1) != mustJSON(w.value) {
				t.Errorf("%s: value at %s = %s, want %s", name, c.Pointer, b1, mustJSON(w.value))
			}
		}
	}
	// the minimal value holds the required fields only, the pattern satisfied.
	min := cases["input/minimal"].Value.(map[string]any)
	if len(min) != 3 || min["order"] != "A-0" {
		t.Errorf("minimal = %v, want order, amount and customer, order A-0", min)
	}
	// every case changes the minimal value in one place: a valid case
	// validates and an invalid one does not (Check agreed, Skip empty).
	for _, c := range res.Cases {
		if c.Skip != "" {
			t.Errorf("%s skipped: %s", c.Name, c.Skip)
		}
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, b := generate(t, charge, nil), generate(t, charge, nil)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatal("two generations of one schema differ")
	}
}

func TestGenerateTakesBaseValues(t *testing.T) {
	base := map[string]any{"order": "B-7", "amount": 20.0, "customer": map[string]any{"id": 4.0}, "note": "ignored"}
	min := byName(generate(t, charge, base))["input/minimal"].Value.(map[string]any)
	if min["order"] != "B-7" || min["amount"] != 20.0 || min["note"] != nil {
		t.Errorf("minimal = %v, want the base's required fields", min)
	}
}

func TestGenerateBounds(t *testing.T) {
	var doc any
	props := map[string]any{}
	for i := range 100 {
		props[strings.Repeat("f", 1+i%5)+string(rune('a'+i%26))+string(rune('a'+i/26))] = map[string]any{"type": "integer", "minimum": 0, "maximum": 9}
	}
	doc = map[string]any{"type": "object", "properties": props}
	sch, err := schema.Compile("wide", doc)
	if err != nil {
		t.Fatal(err)
	}
	res, err := casegen.Generate(doc, casegen.Options{Prefix: "input", Check: sch.Validate, MaxCases: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cases) != 10 || res.Dropped == 0 {
		t.Fatalf("cases=%d dropped=%d, want 10 made and the rest counted", len(res.Cases), res.Dropped)
	}
}

func TestGenerateSkipsWhatItCannotMake(t *testing.T) {
	// a valid value the generator cannot make: an impossible combination.
	var doc any = map[string]any{"type": "string", "pattern": "^a$", "minLength": 2}
	sch, err := schema.Compile("odd", doc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := casegen.Generate(doc, casegen.Options{Prefix: "input", Check: sch.Validate}); err == nil || !strings.Contains(err.Error(), "no value it accepts") {
		t.Fatalf("err = %v, want no value it accepts", err)
	}
}

func TestGenerateFollowsRefs(t *testing.T) {
	res := generate(t, `{"$defs": {"money": {"type": "number", "minimum": 1}}, "type": "object",
		"properties": {"total": {"$ref": "#/$defs/money"}}, "required": ["total"]}`, nil)
	c, ok := byName(res)["input/total=minimum"]
	if !ok || !c.Valid || c.Skip != "" {
		t.Fatalf("total=minimum: %+v (ok=%v)", c, ok)
	}
}

func lookup(v any, ptr string) any {
	if ptr == "" {
		return v
	}
	for _, k := range strings.Split(ptr[1:], "/") {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestGenerateListItems(t *testing.T) {
	res := generate(t, `{"type": "object", "required": ["lines"], "properties": {"lines": {"type": "array", "minItems": 1,
		"items": {"type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "maximum": 9}}}}}}`, nil)
	cases := byName(res)
	for name, want := range map[string]string{
		"input/lines/0/-sku (missing)":  `{"lines":[{}]}`,
		"input/lines/0/qty=maximum":     `{"lines":[{"qty":9,"sku":"x"}]}`,
		"input/lines/0/sku: wrong type": `{"lines":[{"sku":0}]}`,
	} {
		c, ok := cases[name]
		if !ok {
			t.Errorf("no case %q", name)
			continue
		}
		if got := mustJSON(c.Value); got != want || c.Skip != "" {
			t.Errorf("%s = %s (skip %q), want %s", name, got, c.Skip, want)
		}
	}
	if c := cases["input/lines/0/-sku (missing)"]; c.Pointer != "/lines/0/sku" || c.Valid {
		t.Errorf("pointer %q valid %v", c.Pointer, c.Valid)
	}
}
