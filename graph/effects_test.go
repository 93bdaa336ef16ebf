package graph_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/reinhq/rein/graph"
	"github.com/reinhq/rein/journal"
)

// A run's effect graph: a box per call with its remediation state, a
// cylinder per resource (shared by the calls that touch it), read, write
// and send edges, the compensation's edge to the call it takes back, and
// dotted data edges; an unknown format names the known ones.
func TestRenderEffects(t *testing.T) {
	t.Parallel()
	item := 0
	g := &graph.Effects{Title: "run r", Calls: []graph.EffectCall{
		{Effect: journal.Effect{Key: "r/create/1", StepID: "create", Tool: "create_customer", Effect: "write", Reversibility: "compensatable",
			Outcome: "ok", Writes: []string{"crm:customer/c1"}}, State: journal.RemedyDone},
		{Effect: journal.Effect{Key: "r/link[0]/1", StepID: "link", Item: &item, Tool: "link", Effect: "write", Outcome: "ok",
			Reads: []string{"crm:customer/c1"}, Writes: []string{"crm:link/c1/a"}}},
		{Effect: journal.Effect{Key: "r/mail/1", StepID: "mail", Tool: "notify", Effect: "external", Outcome: "timed_out", Sends: []string{"mail:a@b"}},
			State: journal.RemedyEscalated},
		{Effect: journal.Effect{Key: "r/create/1/compensate", StepID: "create", Remedy: "compensate", Tool: "archive", Effect: "write", Outcome: "ok",
			Writes: []string{"crm:customer/c1"}}},
	}, Data: [][2]string{{"r/create/1", "r/link[0]/1"}, {"r/create/1", "nowhere"}}}
	var b bytes.Buffer
	if err := graph.RenderEffects(&b, g, "mermaid"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"%% rein effect graph: run r",
		`c0["create_customer<br>write · compensatable<br>step create<br>remediation#58; done"]:::state_done`,
		`c1["link<br>write<br>step link[0]"]:::call`,
		`c2["notify<br>external<br>step mail<br>outcome timed_out<br>remediation#58; escalated"]:::state_escalated`,
		`c3["archive<br>write<br>compensate of step create"]:::call`,
		`r0[("crm#58;customer/c1")]:::resource`,
		`c0 -->|"write"| r0`, `r0 -->|"read"| c1`, `c2 -->|"send"| r2`, `c3 -->|"write"| r0`,
		`c3 -.->|"compensate"| c0`, `c0 -.->|"data"| c1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("mermaid lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "crm#58;customer/c1") != 1 {
		t.Errorf("a resource touched by three calls is drawn more than once:\n%s", out)
	}
	b.Reset()
	if err := graph.RenderEffects(&b, g, "DOT"); err != nil || !strings.Contains(b.String(), `r0 [label="crm:customer/c1", shape=cylinder`) ||
		!strings.Contains(b.String(), `c3 -> c0 [label="compensate", style=dotted, class="data"]`) {
		t.Errorf("dot: %v\n%s", err, b.String())
	}
	if err := graph.RenderEffects(&b, g, "svg"); err == nil || !strings.Contains(err.Error(), "use mermaid or dot") {
		t.Errorf("unknown format: %v", err)
	}
}
