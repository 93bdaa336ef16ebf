package flow_test

import "testing"

// item and index are visible where a for_each step renders one item (its
// templates, args and fallback), and nowhere else.
func TestForEachItemScope(t *testing.T) {
	t.Parallel()
	const head = `
name: fe
inputs: {type: object, properties: {xs: {type: array}}}
steps:
`
	ok := []string{
		`  - {id: a, tool: send_email, for_each: "input.xs", args: {to: "{item}"}, on_error: fallback, fallback: {tool: send_email, args: {to: "{item}", n: "{index}"}}}`,
		`  - {id: a, prompt_template: "{item}", for_each: "input.xs", on_error: fallback, fallback: {model: m2, prompt_template: "again {item}"}}`,
	}
	for _, step := range ok {
		parse(t, head+step+"\n")
	}
	bad := []struct{ step, err string }{
		{`  - {id: a, tool: send_email, args: {}, on_error: fallback, fallback: {tool: send_email, args: {to: "{item}"}}}`,
			"fallback.args/to: {item} is defined only in for_each steps"},
		{`  - {id: a, tool: send_email, for_each: "input.xs", args: {}, when: "item != null"}`,
			"when: {item} is not defined in when: when is evaluated once, before the items"},
		{`  - {id: a, tool: send_email, for_each: "input.xs", args: {}, gate: "index < 3"}`,
			"gate: {index} is not defined in gate: gate is checked once, on the list"},
	}
	for _, tt := range bad {
		wantDiag(t, parseErr(t, head+tt.step+"\n"), "step a: ", tt.err)
	}
}

// On a for_each step, fallback_value and fallback.value fill one item's
// slot: they are checked against the schema of one item.
func TestForEachFallbackValueIsAnItem(t *testing.T) {
	t.Parallel()
	const head = `
name: fe
inputs: {type: object, properties: {xs: {type: array}}}
schemas:
  one: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
steps:
`
	parse(t, head+`  - {id: a, prompt_template: "{item}", for_each: "input.xs", output_schema: one, on_error: skip, fallback_value: {ok: false}}`+"\n")
	parse(t, head+`  - {id: a, prompt_template: "{item}", for_each: "input.xs", output_schema: one, on_error: fallback, fallback: {value: {ok: false}}}`+"\n")
	wantDiag(t, parseErr(t, head+`  - {id: a, prompt_template: "{item}", for_each: "input.xs", output_schema: one, on_error: skip, fallback_value: []}`+"\n"),
		"step a: fallback_value ")
	wantDiag(t, parseErr(t, head+`  - {id: a, prompt_template: "{item}", for_each: "input.xs", output_schema: one, on_error: skip}`+"\n"),
		"step a: on_error: skip continues with fallback_value, and this step has none")
}
