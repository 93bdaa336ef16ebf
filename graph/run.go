package graph

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/reinhq/rein/flow"
)

// runClasses are the fills of step statuses in MermaidRun.
var runClasses = map[string]string{
	"succeeded": "fill:#c8e6c9,stroke:#2e7d32,color:#1b5e20",
	"defaulted": "fill:#fff9c4,stroke:#f9a825,color:#f57f17",
	"fell_back": "fill:#ffe0b2,stroke:#ef6c00,color:#e65100",
	"failed":    "fill:#ffcdd2,stroke:#c62828,color:#b71c1c",
	"waiting":   "fill:#e1bee7,stroke:#8e24aa,color:#4a148c",
	"skipped":   "fill:#eeeeee,stroke:#9e9e9e,color:#616161",
	"unknown":   "fill:#e1bee7,stroke:#8e24aa,color:#4a148c",
}

// MermaidRun writes the Mermaid flowchart of f (as Mermaid does) with each
// step coloured by its status in a run (step id → succeeded, defaulted,
// fell_back, failed, waiting, skipped or unknown; other statuses and steps
// keep the flow's colours). It returns an error for a nil flow or when w
// fails.
func MermaidRun(w io.Writer, f *flow.Flow, status map[string]string) error {
	return write(w, f, func(b *bytes.Buffer, m *model) {
		renderMermaid(b, m)
		used := map[string]bool{}
		for i, s := range f.Steps {
			st := status[s.ID]
			if runClasses[st] == "" {
				continue
			}
			used[st] = true
			fmt.Fprintf(b, "  class %s run_%s\n", stepNodeID(i, s.ID), st)
		}
		for _, st := range slices.Sorted(maps.Keys(used)) {
			fmt.Fprintf(b, "  classDef run_%s %s\n", st, runClasses[st])
		}
	})
}
