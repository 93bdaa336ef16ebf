//go:build temporalserver

package servertest

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/temporal"
	"github.com/reinhq/rein/tool"
)

// TestBlobPrune: two runs whose steps output 600 KiB each (different
// contents) store blobs; with every blob file made two days old and a
// stray old blob beside them, a prune over the namespace's histories
// deletes only the stray (and the status query's answers, which no
// history holds), and the runs still read back (a query replays
// each history through its blobs). Once run B's execution is deleted from
// the namespace, a second prune deletes the blobs only B referred to and
// keeps A's.
func TestBlobPrune(t *testing.T) {
	t.Setenv("TEMPORAL_VERSION_CHECK_DISABLED", "1")
	ctx := context.Background()
	blobs := t.TempDir()
	dc := temporal.NewBlobConverter(&temporal.BlobCodec{Dir: blobs})
	ts := temporaltest.NewServer(temporaltest.WithT(t), temporaltest.WithBaseClientOptions(client.Options{DataConverter: dc}))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(`name: big
steps:
  - {id: make, tool: make, args: {c: "{input.c}"}, max_output_bytes: 2000000}
  - {id: read, tool: size, args: {text: "{make.text}"}, max_input_bytes: 2000000}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := project.Load(dir, &project.LoadOptions{Tools: []tool.Tool{
		tool.Func(tool.Spec{Name: "make", Effect: tool.EffectRead}, func(_ context.Context, args any) (any, error) {
			return map[string]any{"text": strings.Repeat(args.(map[string]any)["c"].(string), 600<<10)}, nil
		}),
		tool.Func(tool.Spec{Name: "size", Effect: tool.EffectRead}, func(_ context.Context, args any) (any, error) {
			return map[string]any{"len": float64(len(args.(map[string]any)["text"].(string)))}, nil
		})}})
	if err != nil {
		t.Fatal(err)
	}
	flows := temporal.NewFlows()
	flows.Add(p)
	ts.NewWorkerWithOptions(queue, register(flows), workerOptions)
	c := ts.GetDefaultClient()
	ns := ts.GetDefaultNamespace()
	for run, ch := range map[string]string{"run-a": "a", "run-b": "b"} {
		if _, err := temporal.StartRun(ctx, c, p, map[string]any{"c": ch}, temporal.StartOptions{RunID: run, TaskQueue: queue, Namespace: ns}); err != nil {
			t.Fatal(err)
		}
		if st := follow(t, c, run); st.Status != "succeeded" {
			t.Fatalf("%s: %s %+v", run, st.Status, st.Error)
		}
	}
	refsA, refsB := historyRefs(t, c, "run-a"), historyRefs(t, c, "run-b")
	if len(refsA) == 0 || len(refsB) == 0 {
		t.Fatalf("references: run-a %v, run-b %v; want some in each", refsA, refsB)
	}
	// The store also holds blobs no history refers to: the answers of the
	// status query follow read (a query's answer goes through the codec
	// but not into the history). Nobody reads them again: they go too.
	answers := map[string]bool{}
	for _, sum := range storeFiles(t, blobs) {
		if !refsA[sum] && !refsB[sum] {
			answers[sum] = true
		}
	}
	stray := strings.Repeat("5", 64)
	if err := os.MkdirAll(filepath.Join(blobs, "55"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(blobs, "55", stray), []byte("no run wrote this"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := filepath.WalkDir(blobs, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(path, old, old)
	}); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-24 * time.Hour)
	answers[stray] = true

	// The first prune goes through the program, as rein runs prune
	// --temporal runs it: a dry run, then the prune.
	prog := program(t)
	prune := func(extra ...string) []byte {
		args := append([]string{"runs", "prune", "--temporal", ts.GetFrontendHostPort(), "--namespace", ns, "--blobs", blobs, "--older-than", "1d", "-o", "json"}, extra...)
		out, err := exec.Command(prog, args...).Output()
		if err != nil {
			t.Fatalf("rein runs prune %v: %v (%s)", extra, err, out)
		}
		return out
	}
	var dry temporal.BlobPruneResult
	if err := json.Unmarshal(prune("--dry-run"), &dry); err != nil {
		t.Fatal(err)
	}
	if !dry.DryRun || !slices.Equal(sorted(dry.Pruned), sortedSums(answers)) || len(storeFiles(t, blobs)) != len(unionRefs(refsA, refsB))+len(answers) {
		t.Fatalf("dry run: %+v, store %v", dry, storeFiles(t, blobs))
	}
	var res *temporal.BlobPruneResult
	if err := json.Unmarshal(prune(), &res); err != nil {
		t.Fatal(err)
	}
	t.Logf("first prune: %+v", res)
	if got := res.Pruned; !slices.Equal(sorted(got), sortedSums(answers)) || res.Referenced != len(unionRefs(refsA, refsB)) {
		t.Fatalf("first prune: %+v; want the stray %s and the query answers %v gone and %d kept", res, stray, answers, len(unionRefs(refsA, refsB)))
	}
	if got, want := storeFiles(t, blobs), sortedSums(unionRefs(refsA, refsB)); !slices.Equal(got, want) {
		t.Fatalf("after the first prune the store holds %v, want %v", got, want)
	}
	for _, run := range []string{"run-a", "run-b"} {
		if _, err := temporal.ShowRun(ctx, c, run); err != nil {
			t.Fatalf("show %s after the prune: %v", run, err)
		}
	}

	if _, err := c.WorkflowService().DeleteWorkflowExecution(ctx, &workflowservice.DeleteWorkflowExecutionRequest{Namespace: ns, WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: "run-b"}}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, ns, "run-b")
	scan, err := temporal.ReferencedBlobs(ctx, c, ns, temporal.BlobScanLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err = temporal.PruneBlobs(blobs, scan.Referenced, before, false); err != nil {
		t.Fatal(err)
	}
	t.Logf("second prune: scanned %d executions; %+v", scan.Executions, res)
	onlyB := 0
	for sum := range refsB {
		if !refsA[sum] {
			onlyB++
		}
	}
	if res.Blobs != onlyB {
		t.Fatalf("second prune: %+v; want the %d blobs only run-b referred to gone", res, onlyB)
	}
	if got, want := storeFiles(t, blobs), sortedSums(refsA); !slices.Equal(got, want) {
		t.Fatalf("after the second prune the store holds %v, want run-a's %v", got, want)
	}
	if _, err := temporal.ShowRun(ctx, c, "run-a"); err != nil {
		t.Fatalf("show run-a after the second prune: %v", err)
	}
}

// historyRefs are the blobs the history of workflow id refers to.
func historyRefs(t *testing.T, c client.Client, id string) map[string]bool {
	t.Helper()
	refs := map[string]bool{}
	it := c.GetWorkflowHistory(context.Background(), id, "", false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if err := temporal.BlobRefs(ev, refs); err != nil {
			t.Fatal(err)
		}
	}
	return refs
}

// waitGone waits, up to a minute, until workflow id's execution is
// deleted: its history is not found and the listing does not show it.
func waitGone(t *testing.T, c client.Client, ns, id string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		_, err := c.DescribeWorkflowExecution(context.Background(), id, "")
		var nf *serviceerror.NotFound
		if !errors.As(err, &nf) {
			continue
		}
		res, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, Query: "WorkflowId = '" + id + "'"})
		if err == nil && len(res.GetExecutions()) == 0 {
			return
		}
	}
	t.Fatalf("workflow %s was not deleted within a minute", id)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// storeFiles are the names of the files under dir/ab/, sorted.
func storeFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		out = append(out, filepath.Base(f))
	}
	sort.Strings(out)
	return out
}

func unionRefs(a, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func sortedSums(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
