package openai

import (
	"encoding/json"
	"testing"
)

func TestPrepareSchemaStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		strict         bool
		wrapped        bool
	}{
		{
			name:   "optional property made nullable, order kept",
			in:     `{"type":"object","properties":{"reason":{"type":"string"},"route":{"type":"string","enum":["a","b"]},"score":{"type":"number"}},"required":["route"]}`,
			want:   `{"type":"object","properties":{"reason":{"type":["string","null"]},"route":{"type":"string","enum":["a","b"]},"score":{"type":["number","null"]}},"required":["reason","route","score"],"additionalProperties":false}`,
			strict: true,
		},
		{
			name:   "optional enum gains null",
			in:     `{"type":"object","properties":{"unit":{"type":"string","enum":["C","F"]}}}`,
			want:   `{"type":"object","properties":{"unit":{"type":["string","null"],"enum":["C","F",null]}},"required":["unit"],"additionalProperties":false}`,
			strict: true,
		},
		{
			name:   "nested objects and arrays",
			in:     `{"type":"object","properties":{"steps":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"args":{"type":"object","properties":{"city":{"type":"string"}}}},"required":["id"]}}},"required":["steps"],"additionalProperties":false}`,
			want:   `{"type":"object","properties":{"steps":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"args":{"type":["object","null"],"properties":{"city":{"type":["string","null"]}},"required":["city"],"additionalProperties":false}},"required":["id","args"],"additionalProperties":false}}},"required":["steps"],"additionalProperties":false}`,
			strict: true,
		},
		{
			name:   "optional ref and const wrapped in anyOf, oneOf becomes anyOf",
			in:     `{"type":"object","$defs":{"c":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}},"properties":{"c":{"$ref":"#/$defs/c"},"k":{"const":"x"},"u":{"oneOf":[{"type":"string"},{"type":"integer"}]}},"required":["u"]}`,
			want:   `{"type":"object","$defs":{"c":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}},"properties":{"c":{"anyOf":[{"$ref":"#/$defs/c"},{"type":"null"}]},"k":{"anyOf":[{"const":"x"},{"type":"null"}]},"u":{"anyOf":[{"type":"string"},{"type":"integer"}]}},"required":["c","k","u"],"additionalProperties":false}`,
			strict: true,
		},
		{
			name:    "array root wrapped",
			in:      `{"type":"array","items":{"type":"string"}}`,
			want:    `{"type":"object","properties":{"value":{"type":"array","items":{"type":"string"}}},"required":["value"],"additionalProperties":false}`,
			strict:  true,
			wrapped: true,
		},
		{
			name: "free-form map is not strict: sent as given",
			in:   `{"type":"object","properties":{"args":{"type":"object","additionalProperties":{"type":"string"}}}}`,
			want: `{"type":"object","properties":{"args":{"type":"object","additionalProperties":{"type":"string"}}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			send, sh, ok, err := prepareSchema(json.RawMessage(tt.in), true)
			if err != nil || !ok {
				t.Fatalf("prepareSchema: ok %v, %v", ok, err)
			}
			got, _ := json.Marshal(send)
			if string(got) != tt.want {
				t.Errorf("sent\n %s\nwant\n %s", got, tt.want)
			}
			if sh.strict != tt.strict || sh.wrapped != tt.wrapped {
				t.Errorf("strict %v wrapped %v, want %v %v", sh.strict, sh.wrapped, tt.strict, tt.wrapped)
			}
		})
	}
}

func TestPrepareSchemaNothingToSend(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`true`, `{}`} {
		if _, _, ok, err := prepareSchema(json.RawMessage(in), true); ok || err != nil {
			t.Errorf("%s: ok %v err %v, want nothing to send", in, ok, err)
		}
	}
	if _, _, _, err := prepareSchema(json.RawMessage(`{"type":`), true); err == nil {
		t.Error("broken schema: no error")
	}
}

func TestRestoreAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, schema, answer, want string }{
		{
			name:   "null for an optional property dropped, order and numbers kept",
			schema: `{"type":"object","properties":{"route":{"type":"string"},"reason":{"type":"string"},"confidence":{"type":"number"}},"required":["route","reason"]}`,
			answer: `{"route":"account","confidence":null,"reason":"billing","n":12345678901234567890}`,
			want:   `{"route":"account","reason":"billing","n":12345678901234567890}`,
		},
		{
			name:   "null kept where the schema allows it",
			schema: `{"type":"object","properties":{"note":{"type":["string","null"]},"x":{}}}`,
			answer: `{"note":null,"x":null}`,
			want:   `{"note":null,"x":null}`,
		},
		{
			name:   "null of a required property kept (the engine rejects it)",
			schema: `{"type":"object","properties":{"route":{"type":"string"}},"required":["route"]}`,
			answer: `{"route":null}`,
			want:   `{"route":null}`,
		},
		{
			name:   "nested, through arrays and refs",
			schema: `{"type":"object","$defs":{"s":{"type":"object","properties":{"id":{"type":"string"},"after":{"type":"string"}},"required":["id"]}},"properties":{"steps":{"type":"array","items":{"$ref":"#/$defs/s"}},"meta":{"anyOf":[{"type":"object","properties":{"by":{"type":"string"}}},{"type":"string"}]}},"required":["steps"]}`,
			answer: `{"steps":[{"id":"a","after":null},{"id":"b","after":"a"}],"meta":{"by":null}}`,
			want:   `{"steps":[{"id":"a"},{"id":"b","after":"a"}],"meta":{}}`,
		},
		{
			name:   "wrapped root unwrapped",
			schema: `{"type":"array","items":{"type":"object","properties":{"a":{"type":"integer"}}}}`,
			answer: `{"value":[{"a":null},{"a":1}]}`,
			want:   `[{},{"a":1}]`,
		},
		{
			name:   "not JSON: as is",
			schema: `{"type":"object","properties":{"a":{"type":"integer"}}}`,
			answer: `sorry, no`,
			want:   `sorry, no`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, sh, _, err := prepareSchema(json.RawMessage(tt.schema), true)
			if err != nil {
				t.Fatal(err)
			}
			if got := restoreAnswer(tt.answer, sh); got != tt.want {
				t.Errorf("restoreAnswer = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestFormatName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "answer", "triage": "triage", "plan.step 1": "plan_step_1"} {
		if got := formatName(in); got != want {
			t.Errorf("formatName(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzRestoreAnswer(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"string"}}}`, `{"a":null}`)
	f.Add(`{"type":"array","items":{"$ref":"#/$defs/x"},"$defs":{"x":{"anyOf":[{"type":"object"}]}}}`, `{"value":[{"b":null}]}`)
	f.Fuzz(func(t *testing.T, schema, answer string) {
		_, sh, ok, err := prepareSchema(json.RawMessage(schema), true)
		if err != nil || !ok {
			return
		}
		_ = restoreAnswer(answer, sh)
	})
}

func TestReferenceCyclesTerminate(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","$defs":{"a":{"$ref":"#/$defs/a"},"b":{"anyOf":[{"$ref":"#/$defs/b"}]}},"properties":{"x":{"$ref":"#/$defs/a"},"y":{"$ref":"#/$defs/b"}}}`
	_, sh, _, err := prepareSchema(json.RawMessage(schema), true)
	if err != nil {
		t.Fatal(err)
	}
	_ = restoreAnswer(`{"x":null,"y":{"z":null}}`, sh)
}
