package safety_test

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// TestEffectTemplatesAreBounded renders a resource and a compensation of
// 1,000 placeholders over a 100 KB output: neither makes 100 MB; the
// resource is left unrendered and the compensation says why.
func TestEffectTemplatesAreBounded(t *testing.T) {
	t.Parallel()
	many := strings.Repeat("{output.x}", 1000)
	spec := &tool.Spec{Name: "w", Effect: tool.EffectWrite, Resources: []string{many, "db/{output.id}"},
		Undo: &tool.Compensation{Tool: "u", Args: map[string]any{"a": many}}}
	out := map[string]any{"x": strings.Repeat("x", 100_000), "id": "7"}
	var e journal.Effect
	safety.Touches(&e, spec, map[string]any{}, out)
	if len(e.Unrendered) != 1 || e.Unrendered[0] != many || len(e.Writes) != 1 || e.Writes[0] != "db/7" {
		t.Fatalf("writes %d, unrendered %d: want db/7 written and the large one unrendered", len(e.Writes), len(e.Unrendered))
	}
	c := safety.Compensation(spec, map[string]any{}, out)
	if c == nil || len(c.Args) != 0 || !strings.Contains(c.Error, "more than 1048576 bytes") {
		t.Fatalf("compensation args %d bytes, error %q", len(c.Args), c.Error)
	}
}
