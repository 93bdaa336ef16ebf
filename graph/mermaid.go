package graph

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/reinhq/rein/flow"
)

// Mermaid writes f as a Mermaid flowchart (top to bottom); a step with
// on_error: escalate has a hexagon for the person who decides. Main-path edges
// are solid, the implicit order of a plain list dotted and blue ("then":
// ordering, along which a skip does not propagate); retry and failure edges are dashed and red, recovery edges
// (a fallback or default continuing) dashed and orange, skipped edges dashed
// and grey (linkStyle by edge index). It returns an error for a nil flow or
// when w fails.
func Mermaid(w io.Writer, f *flow.Flow) error {
	return write(w, f, renderMermaid)
}

// mermaidShapes are the opening and closing brackets of each node kind.
var mermaidShapes = map[nodeKind][2]string{
	nodeStart:     {`(["`, `"])`},
	nodeEnd:       {`(["`, `"])`},
	nodeFailed:    {`(["`, `"])`},
	nodeStep:      {`["`, `"]`},
	nodeFallback:  {`[/"`, `"/]`},
	nodeDefaulted: {`>"`, `"]`},
	nodeEscalated: {`{{"`, `"}}`},
}

var mermaidClasses = map[nodeKind]string{
	nodeStart:     "terminal",
	nodeEnd:       "terminal",
	nodeFailed:    "failed",
	nodeStep:      "step",
	nodeFallback:  "fallback",
	nodeDefaulted: "defaulted",
	nodeEscalated: "person",
}

// mermaidLinkStyles are the linkStyle of each dashed edge kind, in the order
// they are written.
var mermaidLinkStyles = []struct {
	kinds []edgeKind
	style string
}{
	{[]edgeKind{edgeOrder}, "stroke:#3949ab,color:#1a237e"},
	{[]edgeKind{edgeRetry, edgeFailure}, "stroke:#c62828,color:#c62828"},
	{[]edgeKind{edgeRecovery}, "stroke:#ef6c00,color:#ef6c00"},
	{[]edgeKind{edgeSkipped}, "stroke:#9e9e9e,color:#757575"},
}

func renderMermaid(b *bytes.Buffer, m *model) {
	fmt.Fprintf(b, "%%%% rein graph: %s\n", oneLine(m.title))
	b.WriteString("flowchart TD\n")
	for _, n := range m.nodes {
		sh := mermaidShapes[n.kind]
		fmt.Fprintf(b, "  %s%s%s%s:::%s\n", n.id, sh[0], mermaidText(strings.Join(n.lines, "\n")), sh[1], mermaidClasses[n.kind])
	}
	section := ""
	for _, e := range m.edges {
		if s := edgeSection(e.kind); s != section {
			section = s
			fmt.Fprintf(b, "  %%%% %s\n", s)
		}
		arrow := "-->"
		if e.kind != edgeMain {
			arrow = "-.->"
		}
		if e.label != "" {
			arrow += `|"` + mermaidText(e.label) + `"|`
		}
		fmt.Fprintf(b, "  %s %s %s\n", e.from, arrow, e.to)
	}
	b.WriteString("  classDef step fill:#eef2ff,stroke:#3949ab,color:#1a237e\n")
	b.WriteString("  classDef terminal fill:#e8f5e9,stroke:#2e7d32,color:#1b5e20\n")
	b.WriteString("  classDef failed fill:#ffebee,stroke:#c62828,color:#b71c1c\n")
	b.WriteString("  classDef fallback fill:#fff3e0,stroke:#ef6c00,color:#e65100\n")
	b.WriteString("  classDef defaulted fill:#fffde7,stroke:#f9a825,color:#f57f17\n")
	for _, n := range m.nodes {
		if n.kind == nodeEscalated {
			b.WriteString("  classDef person fill:#f3e5f5,stroke:#8e24aa,color:#4a148c\n")
			break
		}
	}
	for _, ls := range mermaidLinkStyles {
		var idx []string
		for i, e := range m.edges {
			for _, k := range ls.kinds {
				if e.kind == k {
					idx = append(idx, strconv.Itoa(i))
				}
			}
		}
		if len(idx) > 0 {
			fmt.Fprintf(b, "  linkStyle %s %s\n", strings.Join(idx, ","), ls.style)
		}
	}
}

// edgeSection names the comment line above a run of edges.
func edgeSection(k edgeKind) string {
	if k == edgeMain || k == edgeOrder {
		return "main path"
	}
	return "failure paths"
}

// mermaidEscaper turns text into the inside of a Mermaid quoted string:
// characters with a meaning become entity codes (#quot; and the like, which
// Mermaid turns into HTML entities), newlines become <br>. ':' is escaped
// too: Mermaid rewrites any line matching /style.*:\S*#.*;/ (meant for
// style statements) before parsing, which would cut an entity in a label
// that mentions "style".
var mermaidEscaper = strings.NewReplacer(
	"&", "#amp;",
	"#", "#35;",
	`"`, "#quot;",
	"<", "#lt;",
	">", "#gt;",
	"|", "#124;",
	"`", "#96;",
	"%", "#37;",
	":", "#58;",
	"\r\n", "<br>",
	"\n", "<br>",
	"\r", "<br>",
)

func mermaidText(s string) string { return mermaidEscaper.Replace(s) }
