package schema

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/reinhq/rein/flow"
)

// TestAgentFieldsMatchLoader keeps agent.v1.json and flow.ParseAgent's
// field lists the same.
func TestAgentFieldsMatchLoader(t *testing.T) {
	t.Parallel()
	loader := loaderFields(t)
	var doc map[string]any
	if err := json.Unmarshal(Agent(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		list  string
		path  []string
		extra []string
	}{
		{"agentFields", nil, nil},
		{"agentBudgetFields", []string{"properties", "budgets"}, nil},
		{"toolFields", []string{"$defs", "tool"}, []string{"agent", "approval", "workflow", "response_hook"}},
	} {
		want := append(slices.Clone(loader[tc.list]), tc.extra...)
		sort.Strings(want)
		if got := properties(t, doc, tc.path...); !slices.Equal(got, want) {
			t.Errorf("%s: schema fields %v\nloader fields %v", tc.list, got, want)
		}
	}
	var fl struct {
		Defs map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(Flow(), &fl); err != nil {
		t.Fatal(err)
	}
	defs := doc["$defs"].(map[string]any)
	for _, name := range []string{"name", "duration", "schemaRef"} {
		if !reflect.DeepEqual(defs[name], fl.Defs[name]) {
			t.Errorf("$defs/%s differs between agent.v1.json and flow.v1.json: keep them the same", name)
		}
	}
}

// TestAgentCases checks agent.yaml documents against agent.v1.json and
// that flow.ParseAgent agrees.
func TestAgentCases(t *testing.T) {
	t.Parallel()
	sch := compile(t, "agent.v1.json", Agent())
	tests := []struct {
		name, yaml string
		ok         bool
	}{
		{"minimal", "model: m\n", true},
		{"full", "name: a\nmodel: m\ninstructions: i\ntools:\n  look:\n  pay: {approval: required}\n  run: {command: ./r.sh, effect: read, approval: none}\n" +
			"budgets: {max_turns: 3, max_tool_calls: 4, max_tokens: 5, timeout: 1m}\nmax_observation_bytes: 100\nconcurrency: 2\noutput_schema: {type: object}\n", true},
		{"no model", "instructions: i\n", false},
		{"unknown field", "model: m\ntool: {}\n", false},
		{"bad approval", "model: m\ntools: {pay: {approval: yes}}\n", false},
		{"zero budget", "model: m\nbudgets: {max_turns: 0}\n", false},
		{"unknown budget", "model: m\nbudgets: {turns: 3}\n", false},
		{"exec tool without effect", "model: m\ntools: {run: {command: x}}\n", false},
		{"tools as a list", "model: m\ntools: [look, crm.find_customer]\n", true},
		{"tools list with options", "model: m\ntools: [look, {pay: {approval: required}}]\n", false},
		{"tools listed twice", "model: m\ntools: [look, look]\n", false},
		{"guardrail that asks", "model: m\nguardrails: {output: [{name: g, deny: [x], on_trip: ask}], input: [{name: h, regex: y, on_trip: stop}]}\n", true},
		{"guardrail on_trip unknown", "model: m\nguardrails: {output: [{name: g, deny: [x], on_trip: warn}]}\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := yamlValue([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			err = sch.Validate(v)
			if got := err == nil; got != tc.ok {
				t.Errorf("schema valid = %v, want %v (%v)", got, tc.ok, err)
			}
			_, lerr := flow.ParseAgent([]byte(tc.yaml), "testdata/agent.yaml")
			if got := lerr == nil; got != tc.ok {
				t.Errorf("the loader disagrees with the schema: ParseAgent ok = %v, want %v (%v)", got, tc.ok, lerr)
			}
		})
	}
}

// TestAgentExamples validates every example folder's agent.yaml.
func TestAgentExamples(t *testing.T) {
	t.Parallel()
	sch := compile(t, "agent.v1.json", Agent())
	files, err := filepath.Glob("../examples/*/agent.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no ../examples/*/agent.yaml (%v)", err)
	}
	for _, path := range files {
		if err := validateFile(t, sch, path); err != nil {
			t.Errorf("%s breaks agent.v1.json:\n%v", path, err)
		}
	}
}
