package graph

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/reinhq/rein/flow"
)

// DOT writes f as a Graphviz digraph (top to bottom). Main-path edges are
// solid, the implicit order of a plain list dotted ("then": ordering, along
// which a skip does not propagate); retry and failure edges are dashed and red, recovery edges (a
// fallback or default continuing) dashed and orange, skipped edges dashed
// and grey; every node and edge has a class (step, failure, …) that SVG
// output keeps. It returns an error for a nil flow or when w fails.
func DOT(w io.Writer, f *flow.Flow) error {
	return write(w, f, renderDOT)
}

// dotNodeAttrs are the attributes of each node kind besides its label.
var dotNodeAttrs = map[nodeKind]string{
	nodeStart:     `shape=oval, fillcolor="#e8f5e9", color="#2e7d32", class="terminal"`,
	nodeEnd:       `shape=oval, fillcolor="#e8f5e9", color="#2e7d32", class="terminal"`,
	nodeFailed:    `shape=octagon, fillcolor="#ffebee", color="#c62828", fontcolor="#b71c1c", class="failed"`,
	nodeStep:      `class="step"`,
	nodeFallback:  `shape=parallelogram, fillcolor="#fff3e0", color="#ef6c00", class="fallback"`,
	nodeDefaulted: `shape=note, fillcolor="#fffde7", color="#f9a825", class="defaulted"`,
	nodeEscalated: `shape=hexagon, fillcolor="#f3e5f5", color="#8e24aa", class="person"`,
}

// dotEdgeAttrs are the attributes of each edge kind besides its label.
var dotEdgeAttrs = map[edgeKind]string{
	edgeMain:     `class="main"`,
	edgeOrder:    `style=dotted, class="order"`,
	edgeRetry:    `style=dashed, color="#c62828", fontcolor="#c62828", class="retry"`,
	edgeFailure:  `style=dashed, color="#c62828", fontcolor="#c62828", class="failure"`,
	edgeRecovery: `style=dashed, color="#ef6c00", fontcolor="#ef6c00", class="recovery"`,
	edgeSkipped:  `style=dashed, color="#9e9e9e", fontcolor="#757575", class="skipped"`,
}

func renderDOT(b *bytes.Buffer, m *model) {
	fmt.Fprintf(b, "digraph %s {\n", dotString(m.title))
	b.WriteString("  graph [rankdir=TB, fontname=\"Helvetica\"];\n")
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef2ff\", color=\"#3949ab\", fontname=\"Helvetica\"];\n")
	b.WriteString("  edge [fontname=\"Helvetica\", fontsize=10];\n")
	for _, n := range m.nodes {
		fmt.Fprintf(b, "  %s [label=%s, %s];\n", n.id, dotString(strings.Join(n.lines, "\n")), dotNodeAttrs[n.kind])
	}
	section := ""
	for _, e := range m.edges {
		if s := edgeSection(e.kind); s != section {
			section = s
			fmt.Fprintf(b, "  // %s\n", s)
		}
		attrs := dotEdgeAttrs[e.kind]
		if e.label != "" {
			attrs = "label=" + dotString(e.label) + ", " + attrs
		}
		fmt.Fprintf(b, "  %s -> %s [%s];\n", e.from, e.to, attrs)
	}
	b.WriteString("}\n")
}

// dotEscaper turns text into the inside of a DOT quoted string: backslashes
// and quotes are escaped, &, < and > become HTML entities (Graphviz decodes
// them in every label), newlines become \n.
var dotEscaper = strings.NewReplacer(
	`\`, `\\`,
	`"`, `\"`,
	"&", "&amp;",
	"<", "&lt;",
	">", "&gt;",
	"\r\n", `\n`,
	"\n", `\n`,
	"\r", `\n`,
)

// dotString is s as a DOT quoted string.
func dotString(s string) string { return `"` + dotEscaper.Replace(s) + `"` }
