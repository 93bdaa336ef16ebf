package template

import (
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein/flow/ref"
)

// SyntaxError reports a malformed template; Offset is the byte offset in
// the template source.
type SyntaxError struct {
	Offset int
	Msg    string
}

// Error returns the message followed by the byte offset.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s at offset %d", e.Msg, e.Offset)
}

// Ref is one placeholder of a template: its path and the byte offset of its
// opening brace.
type Ref struct {
	Path   ref.Path
	Offset int
}

// part is a literal run of text (already unescaped) or a placeholder.
type part struct {
	text  string
	ref   Ref
	isRef bool
}

// Template is a parsed template. The zero value is not useful; use Parse.
type Template struct {
	src     string
	parts   []part
	refs    []Ref
	litSize int
}

// Parse parses s. Unclosed '{', empty '{}', a lone '}' and placeholders that
// are not valid flow/ref paths are reported as a *SyntaxError.
func Parse(s string) (*Template, error) {
	t := &Template{src: s}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, part{text: lit.String()})
			t.litSize += lit.Len()
			lit.Reset()
		}
	}
	start := 0 // start of the pending run of plain text
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			lit.WriteString(s[start:i])
			if i+1 < len(s) && s[i+1] == '{' {
				lit.WriteByte('{')
				i++
				start = i + 1
				continue
			}
			r, end, err := parsePlaceholder(s, i)
			if err != nil {
				return nil, err
			}
			flush()
			t.parts = append(t.parts, part{ref: r, isRef: true})
			t.refs = append(t.refs, r)
			i = end
			start = end + 1
		case '}':
			lit.WriteString(s[start:i])
			if i+1 < len(s) && s[i+1] == '}' {
				lit.WriteByte('}')
				i++
				start = i + 1
				continue
			}
			return nil, &SyntaxError{Offset: i, Msg: "unexpected '}'; write '}}' for a literal brace"}
		}
	}
	lit.WriteString(s[start:])
	flush()
	return t, nil
}

// parsePlaceholder parses the placeholder whose '{' is at s[open] and
// returns it with the index of its closing '}'.
func parsePlaceholder(s string, open int) (Ref, int, error) {
	rel := strings.IndexByte(s[open+1:], '}')
	if rel < 0 {
		return Ref{}, 0, &SyntaxError{Offset: open, Msg: "unclosed '{'; write '{{' for a literal brace"}
	}
	end := open + 1 + rel
	inner := s[open+1 : end]
	lead := len(inner) - len(strings.TrimLeft(inner, " \t"))
	body := strings.TrimRight(inner[lead:], " \t")
	if body == "" {
		return Ref{}, 0, &SyntaxError{Offset: open, Msg: "empty placeholder '{}'; write '{{}}' for literal braces"}
	}
	p, err := ref.Parse(body)
	if err != nil {
		var se *ref.SyntaxError
		if errors.As(err, &se) {
			return Ref{}, 0, &SyntaxError{Offset: open + 1 + lead + se.Offset, Msg: "bad placeholder {" + body + "}: " + se.Msg}
		}
		return Ref{}, 0, &SyntaxError{Offset: open, Msg: err.Error()}
	}
	return Ref{Path: p, Offset: open}, end, nil
}

// MustParse is like Parse but panics on error; it is meant for constants
// in code and tests.
func MustParse(s string) *Template {
	t, err := Parse(s)
	if err != nil {
		panic(fmt.Sprintf("template.MustParse(%q): %v", s, err))
	}
	return t
}

// String returns the template source as given to Parse.
func (t *Template) String() string { return t.src }

// Refs returns the placeholders in source order. The slice is a copy.
func (t *Template) Refs() []Ref {
	return append([]Ref(nil), t.refs...)
}

// IsLiteral reports whether the template has no placeholders; it then
// renders to its unescaped text.
func (t *Template) IsLiteral() bool { return len(t.refs) == 0 }

// Single reports whether the whole template is exactly one placeholder
// (surrounding spaces inside the braces allowed), in which case Render
// returns the referenced value with its own type.
func (t *Template) Single() bool {
	return len(t.parts) == 1 && t.parts[0].isRef
}

// Text returns the unescaped text of a literal template and true, or ""
// and false when the template has placeholders.
func (t *Template) Text() (string, bool) {
	if !t.IsLiteral() {
		return "", false
	}
	if len(t.parts) == 0 {
		return "", true
	}
	return t.parts[0].text, true
}
