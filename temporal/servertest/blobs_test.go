//go:build temporalserver

package servertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"
	"google.golang.org/protobuf/proto"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/temporal"
	"github.com/reinhq/rein/tool"
)

// TestBlobsKeepTheHistorySmall: with the blob codec on the client (and so
// on its worker), a step's 600 KiB output, and the next step's attempt
// input that carries it, go to the blob store: the run's whole history
// stays under 64 KiB, and the next step still reads the output.
func TestBlobsKeepTheHistorySmall(t *testing.T) {
	t.Setenv("TEMPORAL_VERSION_CHECK_DISABLED", "1")
	blobs := t.TempDir()
	dc := temporal.NewBlobConverter(&temporal.BlobCodec{Dir: blobs})
	ts := temporaltest.NewServer(temporaltest.WithT(t), temporaltest.WithBaseClientOptions(client.Options{DataConverter: dc}))
	big := strings.Repeat("z", 600<<10)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(`name: big
steps:
  - {id: make, tool: make, args: {}, max_output_bytes: 2000000}
  - {id: read, tool: size, args: {text: "{make.text}"}, max_input_bytes: 2000000}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := project.Load(dir, &project.LoadOptions{Tools: []tool.Tool{
		tool.Func(tool.Spec{Name: "make", Effect: tool.EffectRead}, func(context.Context, any) (any, error) {
			return map[string]any{"text": big}, nil
		}),
		tool.Func(tool.Spec{Name: "size", Effect: tool.EffectRead}, func(_ context.Context, args any) (any, error) {
			return map[string]any{"len": float64(len(args.(map[string]any)["text"].(string)))}, nil
		})}})
	if err != nil {
		t.Fatal(err)
	}
	fs := temporal.NewFlows()
	fs.Add(p)
	ts.NewWorkerWithOptions(queue, register(fs), workerOptions)
	c := ts.GetDefaultClient()
	if _, err := temporal.StartRun(context.Background(), c, p, map[string]any{}, temporal.StartOptions{RunID: "run-big", TaskQueue: queue, Namespace: ts.GetDefaultNamespace()}); err != nil {
		t.Fatal(err)
	}
	st := follow(t, c, "run-big")
	if st.Status != "succeeded" || string(st.Outputs["read"]) != `{"len":614400}` {
		t.Fatalf("run: %s %+v, read %s", st.Status, st.Error, st.Outputs["read"])
	}
	it := c.GetWorkflowHistory(context.Background(), "run-big", "", false, 0)
	size, events := 0, 0
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		size += proto.Size(ev)
		events++
	}
	t.Logf("history of a run with a 600 KiB output: %d events, %d bytes", events, size)
	if size > 64<<10 {
		t.Errorf("history is %d bytes: the large payloads went into it", size)
	}
	if files, _ := filepath.Glob(filepath.Join(blobs, "*", "*")); len(files) == 0 {
		t.Error("nothing in the blob store")
	}
}
