package rein_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

var updateCompat = flag.Bool("update-compat", false, "write testdata/compat's database and golden views when they are missing (never rewrites them)")

// compatTools are the Go tools of testdata/compat's flow: create (write,
// compensatable, with a resource) and link (write, reversible), and the
// tools that take them back.
func compatTools() []tool.Tool {
	obj := json.RawMessage(`{"type": "object"}`)
	return []tool.Tool{
		tool.Func(tool.Spec{Name: "create", Effect: tool.EffectWrite, Reversibility: tool.Compensatable, InputSchema: obj,
			OutputSchema: json.RawMessage(`{"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}`),
			Compensate:   &tool.Compensation{Tool: "archive", Args: map[string]any{"id": "{output.id}"}}, Resources: []string{"crm:customer/{output.id}"}},
			func(_ context.Context, args any) (any, error) {
				return map[string]any{"id": "c-" + args.(map[string]any)["name"].(string)}, nil
			}),
		tool.Func(tool.Spec{Name: "link", Effect: tool.EffectWrite, Reversibility: tool.Reversible, InputSchema: obj,
			Undo: &tool.Compensation{Tool: "unlink", Args: map[string]any{"customer": "{args.customer}"}}},
			func(_ context.Context, args any) (any, error) { return map[string]any{"ok": true}, nil }),
		tool.Func(tool.Spec{Name: "archive", Effect: tool.EffectWrite}, func(context.Context, any) (any, error) { return nil, nil }),
		tool.Func(tool.Spec{Name: "unlink", Effect: tool.EffectWrite}, func(context.Context, any) (any, error) { return nil, nil }),
	}
}

// compatViews are what the read views show of a run.
type compatViews struct {
	Show    any            `json:"show"`
	Why     map[string]any `json:"why"`
	Effects any            `json:"effects"`
	Impact  any            `json:"impact"`
}

// TestJournalOfAnEarlierRein opens testdata/compat/v1.db, a store an
// earlier rein wrote (journal records of version 1: for_each call records,
// gate_decision, call_effect, agent_call and remediation events) and
// requires that the read views (Show, Why of every step, Effects, Impact)
// show exactly what they showed when it was written
// (testdata/compat/views.golden.json): a change in how calls are recorded
// must keep reading the records already stored.
func TestJournalOfAnEarlierRein(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbPath, goldenPath := filepath.Join("testdata", "compat", "v1.db"), filepath.Join("testdata", "compat", "views.golden.json")
	if _, err := os.Stat(dbPath); os.IsNotExist(err) && *updateCompat {
		writeCompatDB(t, dbPath)
	}
	data, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatalf("%v (go test -run TestJournalOfAnEarlierRein -update-compat writes it, once)", err)
	}
	tmp := filepath.Join(t.TempDir(), "rein.db")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(ctx, tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// the pinned script path is the writer's (absolute): the reader
	// names this checkout's.
	c, err := loadClient(st, &project.LoadOptions{Tools: compatTools(), Script: filepath.Join("testdata", "compat", "script.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	const id = "compat-1"
	var got compatViews
	if got.Show, err = c.Runs().Show(ctx, id); err != nil {
		t.Fatal(err)
	}
	got.Why = map[string]any{}
	for _, step := range []string{"items", "pl", "helper", "last"} {
		if got.Why[step], err = c.Runs().Why(ctx, id, step); err != nil {
			t.Fatalf("why %s: %v", step, err)
		}
	}
	if got.Effects, err = c.Runs().Effects(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got.Impact, err = c.Runs().Impact(ctx, id, "region-eu", nil); err != nil {
		t.Fatal(err)
	}
	text, err := json.MarshalIndent(&got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	text = append(text, '\n')
	if _, err := os.Stat(goldenPath); os.IsNotExist(err) && *updateCompat {
		if err := os.WriteFile(goldenPath, text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("%v (go test -run TestJournalOfAnEarlierRein -update-compat writes it, once)", err)
	}
	if string(text) != string(want) {
		out := filepath.Join(t.TempDir(), "views.json")
		_ = os.WriteFile(out, text, 0o644)
		t.Errorf("the views of the stored run changed: diff %s %s", goldenPath, out)
	}
}

// writeCompatDB runs testdata/compat's flow (run compat-1) and remediates
// premise region-eu, then copies the store to path.
func writeCompatDB(t *testing.T, path string) {
	ctx := context.Background()
	tmp := filepath.Join(t.TempDir(), "rein.db")
	st, err := openStore(ctx, tmp)
	if err != nil {
		t.Fatal(err)
	}
	p, err := project.Load(filepath.Join("testdata", "compat"), &project.LoadOptions{Tools: compatTools()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := clientOf(&engine.Config{Store: st}).Start(ctx, p, map[string]any{"names": []any{"ada", "bob"}}, &engine.RunOptions{RunID: "compat-1"})
	if err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("run: %v %+v", err, res)
	}
	p.Close()
	c, err := loadClient(st, &project.LoadOptions{Tools: compatTools()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Remediate(ctx, "compat-1", "region-eu", nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
