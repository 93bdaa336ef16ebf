package graph

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"unicode/utf8"

	"github.com/reinhq/rein/flow"
)

// SVG geometry, in px.
const (
	svgNodeW   = 190
	svgLineH   = 16
	svgPadY    = 8
	svgGapX    = 40
	svgGapY    = 46
	svgMargin  = 16
	svgMaxRune = 28 // a label line is cut to this many runes
)

// SVG writes f as an SVG drawing laid out in layers (start at the top,
// each node one layer below the lowest node it comes from; the end and
// the failure terminal at the bottom), with the failure paths of Mermaid.
// Nothing is inline-styled: every element carries classes for a
// stylesheet — nodes "node k-<kind>" (step, start, end, failed,
// fallback, defaulted, person) plus "st-<status>" from status (step id →
// a step's status in a run, with any value), edges "edge e-<kind>" (main,
// order, retry, failure, recovery, skipped). A step's group has the id
// "step-<step id>" and data-step; note (step id → a line such as "3/5
// items") adds a last line to a step's box. Text is escaped. It returns an
// error for a nil flow or when w fails.
func SVG(w io.Writer, f *flow.Flow, status, note map[string]string) error {
	return write(w, f, func(b *bytes.Buffer, m *model) { renderSVG(b, f, m, status, note) })
}

type svgBox struct {
	x, y, w, h int
	layer      int
}

func renderSVG(b *bytes.Buffer, f *flow.Flow, m *model, status, note map[string]string) {
	steps := map[string]*flow.Step{}
	for i, s := range f.Steps {
		steps[stepNodeID(i, s.ID)] = s
	}
	index := map[string]int{}
	for i, n := range m.nodes {
		index[n.id] = i
	}
	layer := layers(m, index)
	// lay each layer out left to right, in node order
	var rows [][]int
	boxes := make([]svgBox, len(m.nodes))
	for i, n := range m.nodes {
		l := layer[i]
		for len(rows) <= l {
			rows = append(rows, nil)
		}
		rows[l] = append(rows[l], i)
		lines := len(n.lines)
		if s := steps[n.id]; s != nil && note[s.ID] != "" {
			lines++
		}
		boxes[i] = svgBox{w: svgNodeW, h: lines*svgLineH + 2*svgPadY, layer: l}
	}
	width, y := 0, svgMargin
	for _, row := range rows {
		rowW, rowH := 0, 0
		for _, i := range row {
			rowW += boxes[i].w + svgGapX
			rowH = max(rowH, boxes[i].h)
		}
		width = max(width, rowW-svgGapX)
		for _, i := range row {
			boxes[i].y = y + (rowH-boxes[i].h)/2
		}
		y += rowH + svgGapY
	}
	height := y - svgGapY + svgMargin
	width += 2 * svgMargin
	for _, row := range rows {
		rowW := -svgGapX
		for _, i := range row {
			rowW += boxes[i].w + svgGapX
		}
		x := svgMargin + (width-2*svgMargin-rowW)/2
		for _, i := range row {
			boxes[i].x = x
			x += boxes[i].w + svgGapX
		}
	}
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" class="dag" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`+"\n",
		width, height, width, height, esc("flow "+m.title))
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs>` + "\n")
	for _, e := range m.edges {
		svgEdge(b, e, boxes[index[e.from]], boxes[index[e.to]])
	}
	for i, n := range m.nodes {
		bx := boxes[i]
		class := "node k-" + kindName(n.kind)
		attrs := ""
		lines := n.lines
		if s := steps[n.id]; s != nil {
			if st := status[s.ID]; st != "" {
				class += " st-" + st
			}
			attrs = fmt.Sprintf(` id="step-%s" data-step="%s"`, esc(s.ID), esc(s.ID))
			if nt := note[s.ID]; nt != "" {
				lines = append(lines[:len(lines):len(lines)], nt)
			}
		}
		fmt.Fprintf(b, `<g class="%s"%s><title>%s</title>`, class, attrs, esc(joinLines(n.lines)+statusTitle(steps[n.id], status)))
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" rx="6"/>`, bx.x, bx.y, bx.w, bx.h)
		for j, line := range lines {
			cls := ""
			if j == 0 {
				cls = ` class="title"`
			}
			fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle"%s>%s</text>`, bx.x+bx.w/2, bx.y+svgPadY+(j+1)*svgLineH-4, cls, esc(cut(line)))
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
}

func statusTitle(s *flow.Step, status map[string]string) string {
	if s == nil || status[s.ID] == "" {
		return ""
	}
	return " — " + status[s.ID]
}

func joinLines(lines []string) string {
	var b bytes.Buffer
	for i, l := range lines {
		if i > 0 {
			b.WriteString(" · ")
		}
		b.WriteString(l)
	}
	return b.String()
}

// layers places each node one layer below the lowest node it comes from,
// over the edges that go forward: a retry loop and an edge back to a node
// it came from (a person's "try again", found by a depth-first walk from
// the start) are left out, so the layering is over a DAG. The terminals
// share the bottom layer.
func layers(m *model, index map[string]int) []int {
	out := make([][]int, len(m.nodes))
	for _, e := range m.edges {
		out[index[e.from]] = append(out[index[e.from]], index[e.to])
	}
	const (
		unseen = iota
		open
		done
	)
	state := make([]int, len(m.nodes))
	back := map[[2]int]bool{}
	var post []int // nodes in post-order: reversed, a topological order
	var walk func(int)
	walk = func(n int) {
		state[n] = open
		for _, to := range out[n] {
			switch state[to] {
			case open:
				back[[2]int{n, to}] = true
			case unseen:
				walk(to)
			}
		}
		state[n] = done
		post = append(post, n)
	}
	for i := range m.nodes {
		if state[i] == unseen {
			walk(i)
		}
	}
	layer := make([]int, len(m.nodes))
	for k := len(post) - 1; k >= 0; k-- {
		n := post[k]
		for _, to := range out[n] {
			if !back[[2]int{n, to}] && to != n {
				layer[to] = max(layer[to], layer[n]+1)
			}
		}
	}
	bottom := 0
	for i, n := range m.nodes {
		if n.kind != nodeEnd && n.kind != nodeFailed {
			bottom = max(bottom, layer[i]+1)
		}
	}
	for i, n := range m.nodes {
		if n.kind == nodeEnd || n.kind == nodeFailed {
			layer[i] = bottom
		}
	}
	return layer
}

func svgEdge(b *bytes.Buffer, e edge, from, to svgBox) {
	class := "edge e-" + edgeName(e.kind)
	label := ""
	if e.label != "" {
		label = "<title>" + esc(e.label) + "</title>"
	}
	if e.from == e.to { // a retry loop on the box's right side
		x, y := from.x+from.w, from.y+from.h/2
		fmt.Fprintf(b, `<path class="%s" d="M%d,%d c30,-24 30,24 0,10" marker-end="url(#arrow)">%s</path>`+"\n", class, x, y-5, label)
		return
	}
	x1, y1 := from.x+from.w/2, from.y+from.h
	x2, y2 := to.x+to.w/2, to.y
	if to.layer <= from.layer { // back up (a person's "try again"): along the sides
		x1, y1 = from.x, from.y+from.h/2
		x2, y2 = to.x, to.y+to.h/2
		fmt.Fprintf(b, `<path class="%s" d="M%d,%d C%d,%d %d,%d %d,%d" marker-end="url(#arrow)">%s</path>`+"\n",
			class, x1, y1, x1-40, y1, x2-40, y2, x2, y2, label)
		return
	}
	my := (y1 + y2) / 2
	fmt.Fprintf(b, `<path class="%s" d="M%d,%d C%d,%d %d,%d %d,%d" marker-end="url(#arrow)">%s</path>`+"\n",
		class, x1, y1, x1, my, x2, my, x2, y2, label)
}

func kindName(k nodeKind) string {
	return [...]string{"start", "end", "failed", "step", "fallback", "defaulted", "person"}[k]
}

func edgeName(k edgeKind) string {
	return [...]string{"main", "order", "retry", "failure", "recovery", "skipped"}[k]
}

func esc(s string) string { return html.EscapeString(s) }

// cut shortens a label line to svgMaxRune runes.
func cut(s string) string {
	if utf8.RuneCountInString(s) <= svgMaxRune {
		return s
	}
	r := []rune(s)
	return string(r[:svgMaxRune-1]) + "…"
}
