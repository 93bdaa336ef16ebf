package graph

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/reinhq/rein/journal"
)

// EffectCall is one call of a run's effect graph: its record and what a
// remediation made of it ("" while nothing was).
type EffectCall struct {
	journal.Effect
	State string
}

// Effects is a run's effect graph to draw: its calls in the order they
// returned and the data edges between them (call keys, From → To).
type Effects struct {
	Title string
	Calls []EffectCall
	Data  [][2]string
}

// RenderEffects writes g in the named format (mermaid or dot, any case):
// a box per call (tool, effect, reversibility, the step and its state),
// a cylinder per resource, an edge from each resource a call read to it
// and from it to each resource it wrote or sent, and dotted data edges
// between calls. A compensation is drawn as a call of its own, with an
// edge to the call it takes back. An unknown format is an error naming
// the known ones.
func RenderEffects(w io.Writer, g *Effects, format string) error {
	m := buildEffects(g)
	var b bytes.Buffer
	switch strings.ToLower(strings.TrimSpace(format)) {
	case "mermaid":
		renderEffectsMermaid(&b, m)
	case "dot":
		renderEffectsDOT(&b, m)
	default:
		return fmt.Errorf("unknown format %q: use mermaid or dot", format)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write graph: %w", err)
	}
	return nil
}

type effNode struct {
	id, label string
	resource  bool
	state     string
}

type effEdge struct {
	from, to, label string
	data            bool
}

type effModel struct {
	title string
	nodes []effNode
	edges []effEdge
}

func buildEffects(g *Effects) *effModel {
	m := &effModel{title: g.Title}
	callID := map[string]string{}
	resID := map[string]string{}
	res := func(name string) string {
		if id, ok := resID[name]; ok {
			return id
		}
		id := "r" + strconv.Itoa(len(resID))
		resID[name] = id
		m.nodes = append(m.nodes, effNode{id: id, label: name, resource: true})
		return id
	}
	for i, c := range g.Calls {
		id := "c" + strconv.Itoa(i)
		callID[c.Key] = id
		lines := []string{c.Tool, c.Effect.Effect}
		if c.Reversibility != "" {
			lines[1] += " · " + c.Reversibility
		}
		where := "step " + c.StepID
		if c.Item != nil {
			where += "[" + strconv.Itoa(*c.Item) + "]"
		}
		if c.PlanStep != "" {
			where += " plan step " + c.PlanStep
		}
		if c.Turn > 0 {
			where += fmt.Sprintf(" turn %d call %d", c.Turn, c.Call)
		}
		if c.Remedy != "" {
			where = c.Remedy + " of " + where
		}
		lines = append(lines, where)
		if c.Outcome != "ok" {
			lines = append(lines, "outcome "+c.Outcome)
		}
		if c.State != "" {
			lines = append(lines, "remediation: "+c.State)
		}
		m.nodes = append(m.nodes, effNode{id: id, label: strings.Join(lines, "\n"), state: c.State})
	}
	for i, c := range g.Calls {
		id := "c" + strconv.Itoa(i)
		for _, r := range c.Reads {
			m.edges = append(m.edges, effEdge{from: res(r), to: id, label: "read"})
		}
		for _, r := range c.Writes {
			m.edges = append(m.edges, effEdge{from: id, to: res(r), label: "write"})
		}
		for _, r := range c.Sends {
			m.edges = append(m.edges, effEdge{from: id, to: res(r), label: "send"})
		}
		if c.Remedy != "" {
			parent := strings.TrimSuffix(c.Key, "/"+c.Remedy)
			if p, ok := callID[parent]; ok {
				m.edges = append(m.edges, effEdge{from: id, to: p, label: c.Remedy, data: true})
			}
		}
	}
	for _, d := range g.Data {
		from, ok1 := callID[d[0]]
		to, ok2 := callID[d[1]]
		if ok1 && ok2 {
			m.edges = append(m.edges, effEdge{from: from, to: to, label: "data", data: true})
		}
	}
	return m
}

// effStateFill colours a call by its remediation state.
var effStateFill = map[string]string{
	journal.RemedyDone:      "fill:#e0f2f1,stroke:#00695c,color:#004d40",
	journal.RemedyFrozen:    "fill:#e3f2fd,stroke:#1565c0,color:#0d47a1",
	journal.RemedyEscalated: "fill:#f3e5f5,stroke:#8e24aa,color:#4a148c",
	journal.RemedyFailed:    "fill:#ffebee,stroke:#c62828,color:#b71c1c",
}

func renderEffectsMermaid(b *bytes.Buffer, m *effModel) {
	fmt.Fprintf(b, "%%%% rein effect graph: %s\n", oneLine(m.title))
	b.WriteString("flowchart LR\n")
	for _, n := range m.nodes {
		if n.resource {
			fmt.Fprintf(b, "  %s[(\"%s\")]:::resource\n", n.id, mermaidText(n.label))
			continue
		}
		class := "call"
		if effStateFill[n.state] != "" {
			class = "state_" + n.state
		}
		fmt.Fprintf(b, "  %s[\"%s\"]:::%s\n", n.id, mermaidText(n.label), class)
	}
	for _, e := range m.edges {
		arrow := "-->"
		if e.data {
			arrow = "-.->"
		}
		fmt.Fprintf(b, "  %s %s|\"%s\"| %s\n", e.from, arrow, mermaidText(e.label), e.to)
	}
	b.WriteString("  classDef call fill:#eef2ff,stroke:#3949ab,color:#1a237e\n")
	b.WriteString("  classDef resource fill:#fafafa,stroke:#616161,color:#212121\n")
	for _, st := range []string{journal.RemedyDone, journal.RemedyFrozen, journal.RemedyEscalated, journal.RemedyFailed} {
		fmt.Fprintf(b, "  classDef state_%s %s\n", st, effStateFill[st])
	}
}

func renderEffectsDOT(b *bytes.Buffer, m *effModel) {
	fmt.Fprintf(b, "digraph %s {\n", dotString(m.title))
	b.WriteString("  graph [rankdir=LR, fontname=\"Helvetica\"];\n")
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef2ff\", color=\"#3949ab\", fontname=\"Helvetica\"];\n")
	b.WriteString("  edge [fontname=\"Helvetica\", fontsize=10];\n")
	for _, n := range m.nodes {
		attrs := `class="call"`
		switch {
		case n.resource:
			attrs = `shape=cylinder, fillcolor="#fafafa", color="#616161", class="resource"`
		case n.state != "":
			attrs = fmt.Sprintf(`class="call state-%s"`, n.state)
		}
		fmt.Fprintf(b, "  %s [label=%s, %s];\n", n.id, dotString(n.label), attrs)
	}
	for _, e := range m.edges {
		attrs := `class="effect"`
		if e.data {
			attrs = `style=dotted, class="data"`
		}
		fmt.Fprintf(b, "  %s -> %s [label=%s, %s];\n", e.from, e.to, dotString(e.label), attrs)
	}
	b.WriteString("}\n")
}
