package graph

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestDOTGraphviz runs every golden flow through Graphviz (dot -Tsvg) to
// check the output is DOT that Graphviz accepts, and that labels come out
// as written (entities decoded once, classes kept).
func TestDOTGraphviz(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("dot")
	if err != nil {
		t.Skip("dot (Graphviz) is not installed: apt-get install -y graphviz to run this test")
	}
	tests := []struct {
		flow string
		want []string // text the SVG must hold
	}{
		{"resume_screen", []string{`class="edge failure"`, `class="node failed"`, `when {score_candidate.score} &gt; 60`,
			`retry ×2 (transient)`, `{&quot;score&quot;:0}`}},
		{"diamond", []string{`fetch&#45;web`, `retry ×3 (any error)`}},
		{"loops", []string{`input.channel != &quot;&lt;none&gt;&quot;`, `&amp;&amp;`, `class="edge skipped"`,
			`class="edge recovery"`, `× for_each input.docs`, `↻ max 3 until output.score &gt;= 8`,
			`loops &lt;&amp; &quot;friends&quot;&gt;`}},
	}
	for _, tc := range tests {
		t.Run(tc.flow, func(t *testing.T) {
			t.Parallel()
			var src bytes.Buffer
			if err := DOT(&src, load(t, tc.flow)); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "-Tsvg")
			cmd.Stdin = &src
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil {
				t.Fatalf("dot -Tsvg: %v\n%s", err, errOut.String())
			}
			if errOut.Len() > 0 {
				t.Errorf("dot -Tsvg warned:\n%s", errOut.String())
			}
			svg := out.String()
			for _, w := range tc.want {
				if !strings.Contains(svg, w) {
					t.Errorf("SVG has no %q", w)
				}
			}
			if strings.Contains(svg, "&amp;lt;") || strings.Contains(svg, "&amp;quot;") {
				t.Error("SVG holds a doubly escaped entity")
			}
		})
	}
}
