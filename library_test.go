package rein_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

func writeFlowDir(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

type lookupIn struct {
	Order string `json:"order"`
}

type lookupOut struct {
	Status string   `json:"status"`
	Items  []string `json:"items"`
	Note   *string  `json:"note"`
}

func lookupTool() tool.Tool {
	return tool.Typed(tool.Spec{Name: "lookup", Effect: tool.EffectRead},
		func(_ context.Context, in lookupIn) (lookupOut, error) {
			return lookupOut{Status: "shipped:" + in.Order}, nil // Items and Note stay nil
		})
}

// A typo in a reference to a Go tool's output field is caught when the
// flow loads, located, because tool.Typed derives the output schema.
func TestTypedToolOutputFieldsAreValidated(t *testing.T) {
	t.Parallel()
	dir := writeFlowDir(t, `name: typo
steps:
  - {id: find, tool: lookup, args: {order: "A-1"}}
  - {id: tell, tool: lookup, args: {order: "{find.staus}"}}
`)
	_, err := project.Load(dir, &project.LoadOptions{Tools: []tool.Tool{lookupTool()}})
	var fe *flow.Error
	if !errors.As(err, &fe) {
		t.Fatalf("Load = %v, want a *flow.Error", err)
	}
	if !regexp.MustCompile(`flow\.yaml:4:\d+: .*find has no field "staus".*status`).MatchString(err.Error()) {
		t.Fatalf("error does not locate the typo:\n%v", err)
	}
}

// The derived schemas: args are checked against In before the call; an
// output with nil slices and pointers (null in JSON) passes Out's schema.
func TestTypedToolSchemasFromGoTypes(t *testing.T) {
	t.Parallel()
	spec := lookupTool().Spec()
	var in, out map[string]any
	if json.Unmarshal(spec.InputSchema, &in) != nil || json.Unmarshal(spec.OutputSchema, &out) != nil {
		t.Fatalf("schemas not derived: in %s, out %s", spec.InputSchema, spec.OutputSchema)
	}
	if _, ok := in["properties"].(map[string]any)["order"]; !ok {
		t.Fatalf("input schema %s lacks order", spec.InputSchema)
	}
	given := json.RawMessage(`{"type":"object"}`)
	kept := tool.Typed(tool.Spec{Name: "k", OutputSchema: given}, func(context.Context, lookupIn) (lookupOut, error) { return lookupOut{}, nil })
	if string(kept.Spec().OutputSchema) != string(given) || kept.Spec().InputSchema == nil {
		t.Fatalf("a given schema must be kept: %s", kept.Spec().OutputSchema)
	}

	dir := writeFlowDir(t, `name: typed
steps:
  - {id: find, tool: lookup, args: {order: "A-1"}}
  - {id: again, tool: lookup, args: {order: "{find.status}"}}
`)
	p, err := project.Load(dir, &project.LoadOptions{Tools: []tool.Tool{lookupTool()}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := clientOf(nil).Run(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunSucceeded || res.Steps["again"].Status != trace.StepSucceeded {
		t.Fatalf("run %s: %v", res.Status, res.Error)
	}

	dir = writeFlowDir(t, `name: badargs
steps:
  - {id: find, tool: lookup, args: {order: "A-1", ordr: "x"}}
`)
	// args the tool's input does not allow are refused when the flow loads
	if _, err = project.Load(dir, &project.LoadOptions{Tools: []tool.Tool{lookupTool()}}); err == nil ||
		!strings.Contains(err.Error(), `flow.yaml:3:57: step find: args have "ordr", which tool lookup's input does not allow (did you mean "order"?)`) {
		t.Fatalf("args with an unknown field: %v", err)
	}
}

// LoadRun of a run started with Go tools names the tools it was not given.
func TestLoadRunNamesTheGoToolsItNeeds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := writeFlowDir(t, `name: needs
steps:
  - {id: find, tool: lookup, approval: required, args: {order: "A-1"}}
`)
	st, err := openStore(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tools := []tool.Tool{lookupTool(), tool.Func(tool.Spec{Name: "unused"}, func(context.Context, any) (any, error) { return nil, nil })}
	p, err := project.Load(dir, &project.LoadOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	res, err := clientOf(&engine.Config{Store: st}).Start(ctx, p, nil, nil)
	if err != nil || res.Status != trace.RunWaiting {
		t.Fatalf("start: %v, %v", res, err)
	}
	_, err = project.LoadRun(ctx, st, res.RunID, nil)
	if err == nil || !strings.Contains(err.Error(), "Go tools lookup,") || !strings.Contains(err.Error(), "LoadOptions{Tools") {
		t.Fatalf("LoadRun without the Go tools: %v", err)
	}
	// only the tools the flow names are needed.
	if _, err := project.LoadRun(ctx, st, res.RunID, &project.LoadOptions{Tools: tools[:1]}); err != nil {
		t.Fatalf("LoadRun with the Go tool: %v", err)
	}
}

// rein.yaml defaults: reach the steps of a flow loaded beside it.
func TestConfigDefaultsApplyToTheFlow(t *testing.T) {
	t.Parallel()
	dir := writeFlowDir(t, "name: hang\nsteps:\n  - {id: h, tool: hang, args: {}}\n")
	if err := os.WriteFile(filepath.Join(dir, "rein.yaml"), []byte("defaults: {retries: 0, timeout: 50ms}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hang := tool.Func(tool.Spec{Name: "hang"}, func(ctx context.Context, _ any) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	p, err := project.Load(dir, &project.LoadOptions{Tools: []tool.Tool{hang}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := clientOf(nil).Run(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	// one attempt (retries: 0): the step's attempts, not the tool's calls,
	// which a timed-out call may make after the run returned.
	if n := res.Steps["h"].Attempts; res.Status != trace.RunFailed || n != 1 || res.Error.Class != fault.Transient || !strings.Contains(res.Error.Message, "timed out after 50ms") {
		t.Fatalf("run %s after %d attempts: %+v", res.Status, n, res.Error)
	}
}

// A planner's plans are checked against the schemas tool.Typed derived: a
// misspelt argument, or a $ref to a field the output does not have, is
// rejected before anything runs.
func TestTypedToolSchemasReachThePlanner(t *testing.T) {
	t.Parallel()
	cat, err := plan.NewCatalog(plan.CatalogConfig{Tools: []tool.Spec{lookupTool().Spec()}})
	if err != nil {
		t.Fatal(err)
	}
	for doc, want := range map[string]string{
		`{"goal":"g","steps":[{"id":"a","tool":"lookup","args":{"ordr":"A-1"}}]}`:                                                                 "ordr",
		`{"goal":"g","steps":[{"id":"a","tool":"lookup","args":{"order":"A-1"}},{"id":"b","tool":"lookup","args":{"order":{"$ref":"a.staus"}}}]}`: "staus",
	} {
		p, err := plan.Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if err := plan.Validate(p, cat); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("plan %s: Validate = %v, want a problem naming %q", doc, err, want)
		}
	}
}
