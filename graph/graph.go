package graph

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/reinhq/rein/flow"
)

// Formats returns the names Render accepts, in the order to offer them.
func Formats() []string { return []string{"mermaid", "dot"} }

// Render writes f in the named format ("mermaid" or "dot", any case). An
// unknown format is an error that names the known ones; otherwise the error
// is the writer's.
func Render(w io.Writer, f *flow.Flow, format string) error {
	switch strings.ToLower(strings.TrimSpace(format)) {
	case "mermaid":
		return Mermaid(w, f)
	case "dot":
		return DOT(w, f)
	}
	return fmt.Errorf("unknown format %q: use mermaid or dot", format)
}

// errNoFlow is returned for a nil flow.
var errNoFlow = errors.New("graph: no flow to draw")

// write draws f with render into a buffer and writes it to w in one call, so
// a failing writer never receives half a graph from a second call.
func write(w io.Writer, f *flow.Flow, render func(*bytes.Buffer, *model)) error {
	if f == nil {
		return errNoFlow
	}
	var b bytes.Buffer
	render(&b, build(f))
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write graph: %w", err)
	}
	return nil
}

// oneLine flattens s for a comment line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}
