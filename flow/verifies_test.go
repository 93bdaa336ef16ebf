package flow_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/tool"
)

// TestVerifiesDeclarations: verifies: lists the output fields a tool is a
// source of truth for, as pointers; a bare name is a top-level field, and
// an MCP server's tool declares them the same way.
func TestVerifiesDeclarations(t *testing.T) {
	t.Parallel()
	cfg, err := flow.ParseConfig([]byte(`tools:
  lookup_account:
    command: [./lookup.sh]
    effect: read
    output_schema:
      type: object
      properties:
        account_id: {type: string}
        owner: {type: object, properties: {email: {type: string}}}
        contacts: {type: array, items: {type: object, properties: {email: {type: string}}}}
        notes: {type: string}
    verifies: [account_id, /owner/email, /contacts/*/email]
mcp:
  crm:
    command: [./crm]
    tools:
      find: {effect: read, verifies: [/id]}
`), "/p/rein.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec := cfg.Tools["lookup_account"].Spec()
	if want := []string{"/account_id", "/owner/email", "/contacts/*/email"}; !slices.Equal(spec.Verifies, want) {
		t.Fatalf("verifies = %q, want %q", spec.Verifies, want)
	}
	if got := cfg.MCP["crm"].Tools["find"].Verifies; !slices.Equal(got, []string{"/id"}) {
		t.Fatalf("mcp verifies = %q", got)
	}
	if err := flow.CheckEffects(registry(t, cfg.Tools), cfg.Tools, nil); err != nil {
		t.Fatalf("CheckEffects: %v", err)
	}
}

// TestVerifiesRejectsBadOnes: a misspelt key, a pointer that does not
// parse, a field twice, and a field the output schema does not have are
// refused with their place and what to write.
func TestVerifiesRejectsBadOnes(t *testing.T) {
	t.Parallel()
	_, err := flow.ParseConfig([]byte(`tools:
  a:
    command: [./a.sh]
    effect: read
    verfies: [id]
  b:
    command: [./b.sh]
    effect: read
    verifies: [account/id, /a~2, /x, /x, ""]
`), "rein.yaml")
	if err == nil {
		t.Fatal("bad declarations accepted")
	}
	for _, want := range []string{
		`rein.yaml:5:5: unknown field "verfies" in tool a (did you mean "verifies"?)`,
		`rein.yaml:9:16: tool b: verifies: "account/id" is neither a field name nor a JSON pointer: write /account/id to name a nested field`,
		`rein.yaml:9:28: tool b: verifies: pointer "/a~2": token 1 ("a~2") has a ~ not followed by 0 or 1`,
		`rein.yaml:9:38: tool b: verifies names /x twice`,
		`rein.yaml:9:42: tool b: verifies: an empty entry`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}

	cfg, err := flow.ParseConfig([]byte(`tools:
  lookup:
    command: [./lookup.sh]
    effect: read
    output_schema: {type: object, properties: {account_id: {type: string}, items: {type: array, items: {type: object, properties: {id: {type: string}}}}, note: {type: string}}}
    verifies: [acount_id, /items/id, /items/*/di, /note/x, /items/0/id]
`), "rein.yaml")
	if err != nil {
		t.Fatal(err)
	}
	err = flow.CheckEffects(registry(t, cfg.Tools), cfg.Tools, nil)
	if err == nil {
		t.Fatal("fields the output schema lacks accepted")
	}
	for _, want := range []string{
		`rein.yaml:6:16: tool lookup: verifies: /acount_id names no field of the tool's output: the output schema has no field "acount_id" at the output (did you mean "account_id"?); its fields there: account_id, items, note`,
		`rein.yaml:6:27: tool lookup: verifies: /items/id names no field of the tool's output: /items is a list: name its items with * (or an index), like /items/*`,
		`rein.yaml:6:38: tool lookup: verifies: /items/*/di names no field of the tool's output: the output schema has no field "di" at /items/* (did you mean "id"?)`,
		`rein.yaml:6:51: tool lookup: verifies: /note/x names no field of the tool's output: /note is a string, which has no fields`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "/items/0/id") {
		t.Errorf("an index into a list refused: %v", err)
	}
}

// TestVerifiesOfGoTools: a Go tool's Verifies are checked against the
// schema derived from its output type.
func TestVerifiesOfGoTools(t *testing.T) {
	t.Parallel()
	type out struct {
		AccountID string `json:"account_id"`
	}
	reg := &tool.Registry{}
	lookup := tool.Typed(tool.Spec{Name: "lookup", Effect: tool.EffectRead, Verifies: []string{"acount_id"}},
		func(context.Context, json.RawMessage) (out, error) { return out{}, nil })
	if err := reg.Register(lookup); err != nil {
		t.Fatal(err)
	}
	err := flow.CheckEffects(reg, nil, nil)
	if err == nil || !strings.Contains(err.Error(), `tool lookup: verifies: /acount_id names no field of the tool's output: the output schema has no field "acount_id" at the output (did you mean "account_id"?)`) {
		t.Fatalf("CheckEffects = %v", err)
	}
}
