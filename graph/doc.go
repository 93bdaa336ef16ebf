// Package graph draws a compiled flow for `rein graph`: the main path (one
// node per step, an edge per requires, when conditions on the edges; the
// implicit order of a plain list dotted and labelled "then") and the failure
// paths (retry loops, on_error skip, fallback and raise, steps skipped by
// when, going on past the steps the skip propagates to) as visibly
// different, dashed and coloured edges.
//
// Mermaid writes a Mermaid flowchart, DOT a Graphviz digraph; Render picks
// one by name. The output depends only on the flow, in file order, so it can
// be committed and diffed.
package graph
