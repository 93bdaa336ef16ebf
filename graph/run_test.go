package graph_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/graph"
)

// TestMermaidRun colours each step by its status in a run.
func TestMermaidRun(t *testing.T) {
	t.Parallel()
	f, err := flow.Parse([]byte("name: r\nsteps:\n  - {id: a, skill: x}\n  - {id: b-c, skill: y}\n  - {id: d, skill: z}\n"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := graph.MermaidRun(&b, f, map[string]string{"a": "succeeded", "b-c": "waiting", "d": "pending"}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"  class s0_a run_succeeded\n", "  class s1_b_c run_waiting\n", "  classDef run_succeeded fill:", "  classDef run_waiting fill:"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "s2_d run_") || !strings.HasPrefix(out, "%% rein graph: r\nflowchart TD\n") {
		t.Errorf("output:\n%s", out)
	}
}
