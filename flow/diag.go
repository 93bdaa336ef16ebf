package flow

import (
	"fmt"
	"sort"
	"strings"
)

// Diagnostic is one problem found in a flow, located in its file.
type Diagnostic struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Step    string `json:"step,omitempty"` // the step id, when the problem belongs to a step
	Message string `json:"message"`
	Warning bool   `json:"warning,omitempty"`
	// Code names the kind of problem for the problems a caller may give
	// its own advice about (CodeModelNotConfigured, CodeUntrustedTools);
	// "" for the others.
	Code string `json:"code,omitempty"`
}

// Diagnostic codes.
const (
	// CodeModelNotConfigured: a step names a model nothing answers.
	CodeModelNotConfigured = "model_not_configured"
	// CodeUntrustedTools: the flow declares tools of its own and
	// Options.TrustedToolsOnly refuses them.
	CodeUntrustedTools = "untrusted_tools"
)

// String formats d as file:line:col: [warning: ]step ID: message.
func (d Diagnostic) String() string {
	var b strings.Builder
	file := d.File
	if file == "" {
		file = "<flow>"
	}
	fmt.Fprintf(&b, "%s:%d:%d: ", file, d.Line, d.Col)
	if d.Warning {
		b.WriteString("warning: ")
	}
	if d.Step != "" {
		fmt.Fprintf(&b, "step %s: ", d.Step)
	}
	b.WriteString(d.Message)
	return b.String()
}

// Error is returned when a flow does not validate. It holds every problem
// found, sorted by position.
type Error struct {
	Diagnostics []Diagnostic
}

// Error lists all problems, one per line.
func (e *Error) Error() string {
	lines := make([]string, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

type diagnostics struct {
	file  string
	items []Diagnostic
}

func (ds *diagnostics) add(pos Pos, step, format string, args ...any) {
	ds.items = append(ds.items, Diagnostic{File: ds.file, Line: pos.Line, Col: pos.Col, Step: step, Message: fmt.Sprintf(format, args...)})
}

// addCode is add for a problem with a Diagnostic.Code.
func (ds *diagnostics) addCode(code string, pos Pos, step, format string, args ...any) {
	ds.add(pos, step, format, args...)
	ds.items[len(ds.items)-1].Code = code
}

func (ds *diagnostics) warn(pos Pos, step, format string, args ...any) {
	ds.items = append(ds.items, Diagnostic{File: ds.file, Line: pos.Line, Col: pos.Col, Step: step, Message: fmt.Sprintf(format, args...), Warning: true})
}

// split sorts the diagnostics and separates errors from warnings.
func (ds *diagnostics) split() (errs, warns []Diagnostic) {
	sort.SliceStable(ds.items, func(i, j int) bool {
		a, b := ds.items[i], ds.items[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	for _, d := range ds.items {
		if d.Warning {
			warns = append(warns, d)
		} else {
			errs = append(errs, d)
		}
	}
	return errs, warns
}

// didYouMean returns ` (did you mean "x"?)` for the closest candidate within
// edit distance 2, or "".
func didYouMean(name string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Damerau–Levenshtein (optimal string alignment) distance,
// so a swapped pair of letters ("retires" for "retries") costs one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
