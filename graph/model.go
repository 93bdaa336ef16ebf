package graph

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/reinhq/rein/flow"
)

// nodeKind is what a node of the drawing stands for; it picks the shape.
type nodeKind int

const (
	nodeStart nodeKind = iota
	nodeEnd
	nodeFailed
	nodeStep
	nodeFallback
	nodeDefaulted
	nodeEscalated // on_error: escalate, a person decides
)

// edgeKind is which path an edge belongs to; it picks the line style.
type edgeKind int

const (
	edgeMain     edgeKind = iota // requires, start and end
	edgeOrder                    // the implicit "after the previous step" of a plain list
	edgeRetry                    // a retry self-loop
	edgeFailure                  // a final failure: to the failed terminal, a fallback or a default
	edgeRecovery                 // a fallback or default continuing downstream
	edgeSkipped                  // around a step whose when was false
)

// node is one box of the drawing. id is safe in Mermaid and DOT unquoted.
type node struct {
	id    string
	kind  nodeKind
	lines []string
}

// edge is one arrow of the drawing.
type edge struct {
	from, to string
	label    string
	kind     edgeKind
}

// model is a format-independent drawing of a flow: nodes and edges in a
// deterministic order (file order of the steps).
type model struct {
	title string
	nodes []node
	edges []edge
}

const (
	startID  = "start"
	endID    = "finish"
	failedID = "run_failed"
	// maxValueRunes bounds how much of a fallback value a label shows.
	maxValueRunes = 60
)

// build draws f: first the main path, then the failure paths.
func build(f *flow.Flow) *model {
	m := &model{title: f.Name}
	ids := make([]string, len(f.Steps))
	for i, s := range f.Steps {
		ids[i] = stepNodeID(i, s.ID)
	}
	// targets are where a step's output goes next: its downstream, or the end.
	targets := func(s *flow.Step) []string {
		if len(s.Downstream) == 0 {
			return []string{endID}
		}
		out := make([]string, 0, len(s.Downstream))
		for _, d := range s.Downstream {
			out = append(out, ids[d])
		}
		return out
	}
	// sources are where a step's input comes from: its requires, or the start.
	sources := func(s *flow.Step) []string {
		if len(s.RequireIdx) == 0 {
			return []string{startID}
		}
		out := make([]string, 0, len(s.RequireIdx))
		for _, r := range s.RequireIdx {
			out = append(out, ids[r])
		}
		return out
	}

	canSkip := skippable(f)
	m.nodes = append(m.nodes, node{id: startID, kind: nodeStart, lines: []string{"start"}})
	failed := false
	for i, s := range f.Steps {
		m.nodes = append(m.nodes, node{id: ids[i], kind: nodeStep, lines: stepLines(s)})
		switch s.OnError {
		case flow.Skip:
			m.nodes = append(m.nodes, node{id: ids[i] + "_defaulted", kind: nodeDefaulted,
				lines: []string{"defaulted", valueText(s.FallbackValue)}})
		case flow.Fallback:
			lines, canFail := fallbackLines(s)
			m.nodes = append(m.nodes, node{id: ids[i] + "_fallback", kind: nodeFallback, lines: lines})
			failed = failed || canFail
		case flow.Escalate:
			m.nodes = append(m.nodes, node{id: ids[i] + "_person", kind: nodeEscalated,
				lines: []string{"waits for a person", "approve · reject · settle"}})
			failed = true
		default:
			failed = true
		}
	}
	m.nodes = append(m.nodes, node{id: endID, kind: nodeEnd, lines: []string{"end"}})
	if failed {
		m.nodes = append(m.nodes, node{id: failedID, kind: nodeFailed, lines: []string{"run failed"}})
	}

	for i, s := range f.Steps {
		label, kind := "", edgeMain
		if s.ImplicitOrder {
			label, kind = "then", edgeOrder
		}
		if s.When != nil {
			label = "when " + s.When.Source()
		}
		for _, from := range sources(s) {
			m.add(edge{from: from, to: ids[i], label: label, kind: kind})
		}
	}
	for i, s := range f.Steps {
		if len(s.Downstream) == 0 {
			m.add(edge{from: ids[i], to: endID, kind: edgeMain})
		}
	}

	for i, s := range f.Steps {
		if s.Retries > 0 {
			classes := "transient"
			if s.OnError == flow.Retry {
				classes = "any error"
			}
			m.add(edge{from: ids[i], to: ids[i], kind: edgeRetry,
				label: fmt.Sprintf("retry ×%d (%s)", s.Retries, classes)})
		}
		switch s.OnError {
		case flow.Skip:
			note := ids[i] + "_defaulted"
			m.add(edge{from: ids[i], to: note, label: "error: skip", kind: edgeFailure})
			for _, to := range targets(s) {
				m.add(edge{from: note, to: to, kind: edgeRecovery})
			}
		case flow.Fallback:
			fb := ids[i] + "_fallback"
			m.add(edge{from: ids[i], to: fb, label: "error: fallback", kind: edgeFailure})
			for _, to := range targets(s) {
				m.add(edge{from: fb, to: to, kind: edgeRecovery})
			}
			if _, canFail := fallbackLines(s); canFail {
				m.add(edge{from: fb, to: failedID, label: "fallback error", kind: edgeFailure})
			}
		case flow.Escalate:
			p := ids[i] + "_person"
			m.add(edge{from: ids[i], to: p, label: "error: escalate", kind: edgeFailure})
			m.add(edge{from: p, to: ids[i], label: "approve: try again", kind: edgeRecovery})
			for _, to := range targets(s) {
				m.add(edge{from: p, to: to, label: "settle", kind: edgeRecovery})
			}
			m.add(edge{from: p, to: failedID, label: "reject", kind: edgeFailure})
		default:
			m.add(edge{from: ids[i], to: failedID, label: "error", kind: edgeFailure})
		}
		if s.When != nil {
			for _, from := range sources(s) {
				for _, to := range skipTargets(f, s, ids) {
					m.add(edge{from: from, to: to, label: "skipped", kind: edgeSkipped})
				}
			}
		} else if by := skippedBy(f, s, canSkip); by != nil {
			// a skip that reaches s through what it reads, not through
			// its requires: the run arrives at s and goes on past it.
			for _, from := range sources(s) {
				for _, to := range skipTargets(f, s, ids) {
					m.add(edge{from: from, to: to, label: "skipped with " + by.ID, kind: edgeSkipped})
				}
			}
		}
	}
	return m
}

// skippable reports, by step index, which steps may end skipped: those
// with a when of their own, and those a skip reaches (flow.Step.SkipFrom).
func skippable(f *flow.Flow) []bool {
	can := make([]bool, len(f.Steps))
	for _, i := range f.Order {
		s := f.Steps[i]
		can[i] = s.When != nil
		for _, j := range s.SkipFrom {
			can[i] = can[i] || can[j]
		}
	}
	return can
}

// skippedBy is a skippable step whose skip reaches s although s does not
// require it (s reads its output), or nil.
func skippedBy(f *flow.Flow, s *flow.Step, canSkip []bool) *flow.Step {
	for _, j := range s.SkipFrom {
		if canSkip[j] && !slices.Contains(s.RequireIdx, j) {
			return f.Steps[j]
		}
	}
	return nil
}

// skipTargets are where the run goes on when s is skipped: its downstream
// steps, except that a step the skip propagates to (flow.Step.SkipFrom) is
// skipped too and the run goes on after it; the end when nothing follows.
func skipTargets(f *flow.Flow, s *flow.Step, ids []string) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(s *flow.Step)
	walk = func(s *flow.Step) {
		if len(s.Downstream) == 0 && !seen[endID] {
			seen[endID] = true
			out = append(out, endID)
		}
		for _, d := range s.Downstream {
			next := f.Steps[d]
			if slices.Contains(next.SkipFrom, s.Index) {
				walk(next)
			} else if !seen[ids[d]] {
				seen[ids[d]] = true
				out = append(out, ids[d])
			}
		}
	}
	walk(s)
	return out
}

// add appends e unless the same arrow of the same kind is already drawn.
func (m *model) add(e edge) {
	for _, x := range m.edges {
		if x.from == e.from && x.to == e.to && x.kind == e.kind {
			return
		}
	}
	m.edges = append(m.edges, e)
}

// stepNodeID is a node id for the step at index i: "s<i>_" and the id with
// every character outside [A-Za-z0-9_] replaced by '_'. The index keeps ids
// unique ("a-b" and "a_b" differ) and the prefix keeps them clear of
// keywords ("end", "node", "graph").
func stepNodeID(i int, id string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "s%d", i)
	if id != "" {
		b.WriteByte('_')
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// stepLines is a step's label: its id, what it calls, and its loops.
func stepLines(s *flow.Step) []string {
	lines := []string{s.ID}
	what := string(s.Type)
	switch {
	case s.Tool != "":
		what += " · " + s.Tool
	case s.Model != "":
		what += " · " + s.Model
	case s.Skill != "":
		what += " · skill " + s.Skill
	}
	lines = append(lines, what)
	if s.ForEach != nil {
		line := "× for_each"
		if s.ForEach.Items != nil {
			line += " " + s.ForEach.Items.Source()
		}
		lines = append(lines, line)
	}
	if s.Repeat != nil {
		line := fmt.Sprintf("↻ max %d", s.Repeat.Max)
		if s.Repeat.Until != nil {
			line += " until " + s.Repeat.Until.Source()
		}
		lines = append(lines, line)
	}
	if s.Mandatory {
		lines = append(lines, "mandatory")
	}
	return lines
}

// fallbackLines is the label of a step's fallback node, and whether the
// fallback itself can fail (a tool or a model; a value cannot).
func fallbackLines(s *flow.Step) ([]string, bool) {
	fb := s.Fallback
	switch {
	case fb == nil:
		return []string{"fallback value", valueText(s.FallbackValue)}, false
	case fb.HasValue:
		return []string{"fallback value", valueText(fb.Value)}, false
	case fb.Tool != "":
		return []string{"fallback", "tool · " + fb.Tool}, true
	case fb.Model != "":
		return []string{"fallback", "llm · " + fb.Model}, true
	}
	return []string{"fallback"}, true
}

// valueText is v as compact JSON, cut to maxValueRunes.
func valueText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	s := strings.TrimSuffix(b.String(), "\n")
	if utf8.RuneCountInString(s) > maxValueRunes {
		s = string([]rune(s)[:maxValueRunes-1]) + "…"
	}
	return s
}
