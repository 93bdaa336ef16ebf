package schema

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/tool"
)

func TestEmbedded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		get  func() []byte
	}{
		{"flow.v1.json", Flow},
		{"rein.v1.json", Config},
		{"agent.v1.json", Agent},
		{"plan.v1.json", Plan},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := tc.get()
			if !json.Valid(b) {
				t.Fatal("not JSON")
			}
			compile(t, tc.name, b)
			b[0] = 'x'
			if tc.get()[0] != '{' {
				t.Error("changing the returned bytes changed the embedded schema")
			}
		})
	}
}

// TestExamples validates the two reference flows (testdata/: an LLM
// workflow and an agent-driven one, copies of flow/testdata/design/) and
// every example folder's flow.yaml and rein.yaml.
func TestExamples(t *testing.T) {
	t.Parallel()
	flowSchema := compile(t, "flow.v1.json", Flow())
	configSchema := compile(t, "rein.v1.json", Config())
	flows, err := filepath.Glob("../examples/*/flow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	configs, err := filepath.Glob("../examples/*/rein.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(flows) == 0 {
		t.Log("no ../examples/*/flow.yaml yet: checking the reference flows only")
	}
	flows = append([]string{"testdata/resume_screen.yaml", "testdata/process.yaml"}, flows...)
	for _, path := range flows {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			if err := validateFile(t, flowSchema, path); err != nil {
				t.Errorf("%s breaks flow.v1.json:\n%v", path, err)
			}
		})
	}
	for _, path := range configs {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			if err := validateFile(t, configSchema, path); err != nil {
				t.Errorf("%s breaks rein.v1.json:\n%v", path, err)
			}
		})
	}
}

// TestSharedDefs checks that the definitions both schemas hold are the same.
func TestSharedDefs(t *testing.T) {
	t.Parallel()
	var fl, cfg struct {
		Defs map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(Flow(), &fl); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(Config(), &cfg); err != nil {
		t.Fatal(err)
	}
	for name, def := range cfg.Defs {
		if !reflect.DeepEqual(def, fl.Defs[name]) {
			t.Errorf("$defs/%s differs between rein.v1.json and flow.v1.json: keep them the same", name)
		}
	}
	if _, ok := cfg.Defs["tool"]; !ok {
		t.Error("rein.v1.json has no $defs/tool")
	}
}

// loaderOptions accept every tool and model name.
var loaderOptions = &flow.Options{
	Tools:  func(name string) (tool.Spec, bool) { return tool.Spec{Name: name}, true },
	Models: func(string) bool { return true },
}

// TestConfigCases checks rein.yaml documents against rein.v1.json and,
// where the loader would read them, that flow.ParseConfig agrees.
func TestConfigCases(t *testing.T) {
	t.Parallel()
	sch := compile(t, "rein.v1.json", Config())
	tests := []struct {
		name string
		yaml string
		ok   bool
	}{
		{"empty tools", "tools:\n", true},
		{"string command", "tools:\n  t: { command: ./t.sh, effect: read, timeout: 5 }\n", true},
		{"full tool", "tools:\n  send-mail:\n    command: [./m.sh, --to, x]\n    description: d\n    effect: external\n" +
			"    reversibility: compensatable\n    idempotent: true\n    timeout: 1m\n    max_output_bytes: 100\n" +
			"    env: { A: b, PORT: 8080 }\n    input_schema: { type: object }\n    output_schema: { type: object }\n", true},
		{"models not supported", "models:\n  gpt: {}\n", false},
		{"unknown top field", "tool:\n  t: { command: x }\n", false},
		{"unknown tool field", "tools:\n  t: { command: x, effects: read }\n", false},
		{"no command", "tools:\n  t: { effect: read }\n", false},
		{"empty command list", "tools:\n  t: { command: [] }\n", false},
		{"blank command", "tools:\n  t: { command: \"  \" }\n", false},
		{"bad effect", "tools:\n  t: { command: x, effect: nuclear }\n", false},
		{"bad reversibility", "tools:\n  t: { command: x, reversibility: maybe }\n", false},
		{"bad tool name", "tools:\n  9t: { command: x }\n", false},
		{"bad timeout", "tools:\n  t: { command: x, timeout: soon }\n", false},
		{"defaults", "defaults: { retries: 0, timeout: 90s }\n", true},
		{"defaults retries out of range", "defaults: { retries: 11 }\n", false},
		{"defaults zero timeout", "defaults: { timeout: 0 }\n", false},
		{"unknown defaults field", "defaults: { retry: 1 }\n", false},
		{"mcp tool effects", "mcp:\n  crm:\n    command: [./crm]\n    tools:\n      create: { effect: write, reversibility: compensatable, compensate: { tool: crm.archive, args: { id: \"{output.id}\" } },\n" +
			"        resources: [\"crm:customer/{output.id}\"], tags: [user-facing] }\n      ping: { idempotent: true }\n", true},
		{"mcp tool unknown field", "mcp:\n  crm: { command: x, tools: { t: { effect: read, approval: required } } }\n", false},
		{"mcp tool compensation without tool", "mcp:\n  crm: { command: x, tools: { t: { reversibility: compensatable, compensate: { args: {} } } } }\n", false},
		{"mcp tool bad tag", "mcp:\n  crm: { command: x, tools: { t: { tags: [\"no tags\"] } } }\n", false},
		{"tool verifies", "tools:\n  t: { command: x, effect: read, verifies: [account_id, /items/*/id] }\n", true},
		{"mcp tool verifies", "mcp:\n  crm: { command: x, tools: { t: { effect: read, verifies: [/id] } } }\n", true},
		{"policy rule on user-mentioned", "policy:\n  rules:\n    - {name: r, provenance: [user-mentioned], unverified: true, verdict: require_approval}\n", true},
		{"policy rule on an unknown origin", "policy:\n  rules:\n    - {name: r, provenance: [user-said], verdict: block}\n", false},
		{"verifies not a list", "tools:\n  t: { command: x, effect: read, verifies: account_id }\n", false},
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
			_, lerr := flow.ParseConfig([]byte(tc.yaml), "testdata/rein.yaml")
			if got := lerr == nil; got != tc.ok {
				t.Errorf("the loader disagrees with the schema: ParseConfig ok = %v, want %v (%v)", got, tc.ok, lerr)
			}
		})
	}
}

// TestSchemaFiles checks that the embedded bytes are the files on disk.
func TestSchemaFiles(t *testing.T) {
	t.Parallel()
	for name, got := range map[string][]byte{"flow.v1.json": Flow(), "rein.v1.json": Config(), "agent.v1.json": Agent()} {
		want := mustRead(t, name)
		if !bytes.Equal(got, want) {
			t.Errorf("embedded %s differs from the file", name)
		}
	}
}

// TestPlanSchema: plan.v1.json takes what plan.Parse takes, a declaration
// included, and refuses a fact with a source the runtime does not record.
func TestPlanSchema(t *testing.T) {
	t.Parallel()
	sch := compile(t, "plan.v1.json", Plan())
	good := `{"goal": "g", "steps": [{"id": "a", "tool": "create", "depends_on": [], "args": {"x": {"$ref": "b.y"}},
		"declaration": {"action": "create", "facts": [{"claim": "c", "source": "tool:lookup", "evidence": "e"}],
		"assumptions": [{"id": "p1", "claim": "c", "affects": ["/x"]}], "side_effects": ["a record"]}}]}`
	for doc, ok := range map[string]bool{
		good: true,
		strings.Replace(good, `"tool:lookup"`, `"guess"`, 1): false,
		strings.Replace(good, `"depends_on"`, `"needs"`, 1):  false,
	} {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); (err == nil) != ok {
			t.Errorf("valid = %v, want %v: %s", err == nil, ok, doc)
		}
		if _, err := plan.Parse([]byte(doc)); (err == nil) != ok {
			t.Errorf("plan.Parse: %v, want ok=%v: %s", err, ok, doc)
		}
	}
}
