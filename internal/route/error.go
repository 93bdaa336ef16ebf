package route

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoMatch is returned (classed fault.Business) by Router.Route when no
// rule matches and the router has neither a semantic router nor a fallback
// route. Test for it with errors.Is.
var ErrNoMatch = errors.New("no rule matched the request and no semantic router or fallback route is configured")

// Problem is one thing wrong with a router configuration or a routes file.
type Problem struct {
	// File, Line and Col locate the problem in a routes file (1-based);
	// they are zero for a Config built in code.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
	// Path names the offending part: "routes[1].name", "rules[3].regexp",
	// or for a file "routes[0].rules[1].expr".
	Path    string `json:"path"`
	Message string `json:"message"`

	// where the problem lies in the Config, for Parse to locate it in the
	// file: part is "route", "rule", "fallback" or "" (the whole config).
	part   string
	index  int
	field  string
	offset int // byte offset inside the field's value, or -1
}

// String formats p as file:line:col: message, or path: message when p has
// no file position.
func (p Problem) String() string {
	if p.Line > 0 {
		file := p.File
		if file == "" {
			file = "<routes>"
		}
		return fmt.Sprintf("%s:%d:%d: %s", file, p.Line, p.Col, p.Message)
	}
	if p.Path == "" {
		return p.Message
	}
	if p.offset >= 0 && p.field == "expr" {
		return fmt.Sprintf("%s: %s (at byte %d of the expression)", p.Path, p.Message, p.offset)
	}
	return p.Path + ": " + p.Message
}

// Error lists every problem New or Parse found, in order of position.
type Error struct {
	Problems []Problem
}

// Error returns the problems, one per line.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// problems collects Problems.
type problems struct {
	list []Problem
}

func (ps *problems) add(part string, index int, field string, offset int, path, format string, args ...any) {
	ps.list = append(ps.list, Problem{Path: path, Message: fmt.Sprintf(format, args...), part: part, index: index, field: field, offset: offset})
}

func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	return &Error{Problems: ps.list}
}
