package ref

import (
	"fmt"
	"strconv"
	"strings"
)

// Segment is one step of a Path: a map key, or a list index when IsIndex is
// set.
type Segment struct {
	Key     string
	Index   int
	IsIndex bool
}

// Path is a parsed reference such as a.b[0].c. The first segment of a path
// produced by Parse is always a key (the root name).
type Path []Segment

// SyntaxError reports a malformed path; Offset is the byte offset in the
// parsed string where the problem was found.
type SyntaxError struct {
	Offset int
	Msg    string
}

// Error returns the message followed by the byte offset.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s at offset %d", e.Msg, e.Offset)
}

// Parse parses s as ident ( "." key | "[" digits "]" )*. It returns a
// *SyntaxError saying what is wrong and at which byte offset.
func Parse(s string) (Path, error) {
	if s == "" {
		return nil, &SyntaxError{Offset: 0, Msg: "empty reference"}
	}
	n := 1 + strings.Count(s, ".") + strings.Count(s, "[")
	p := make(Path, 0, n)
	i, key, err := scanKey(s, 0, "reference")
	if err != nil {
		return nil, err
	}
	p = append(p, Segment{Key: key})
	for i < len(s) {
		switch s[i] {
		case '.':
			var k string
			i, k, err = scanKey(s, i+1, "field name after '.'")
			if err != nil {
				return nil, err
			}
			p = append(p, Segment{Key: k})
		case '[':
			var idx int
			i, idx, err = scanIndex(s, i)
			if err != nil {
				return nil, err
			}
			p = append(p, Segment{Index: idx, IsIndex: true})
		default:
			return nil, &SyntaxError{Offset: i, Msg: fmt.Sprintf("unexpected %q in reference; expected '.' or '['", s[i])}
		}
	}
	return p, nil
}

// MustParse is like Parse but panics on error; it is meant for constants
// in code and tests.
func MustParse(s string) Path {
	p, err := Parse(s)
	if err != nil {
		panic(fmt.Sprintf("ref.MustParse(%q): %v", s, err))
	}
	return p
}

func isKeyStart(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isKeyByte(c byte) bool {
	return isKeyStart(c) || ('0' <= c && c <= '9') || c == '-'
}

// IsKey reports whether s is a valid identifier or key:
// [A-Za-z_][A-Za-z0-9_-]*.
func IsKey(s string) bool {
	if s == "" || !isKeyStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isKeyByte(s[i]) {
			return false
		}
	}
	return true
}

func scanKey(s string, i int, what string) (int, string, error) {
	if i >= len(s) {
		return i, "", &SyntaxError{Offset: i, Msg: "missing " + what}
	}
	if !isKeyStart(s[i]) {
		return i, "", &SyntaxError{Offset: i, Msg: fmt.Sprintf("unexpected %q; a %s must start with a letter or '_'", s[i], what)}
	}
	j := i + 1
	for j < len(s) && isKeyByte(s[j]) {
		j++
	}
	return j, s[i:j], nil
}

func scanIndex(s string, open int) (int, int, error) {
	i := open + 1
	j := i
	for j < len(s) && '0' <= s[j] && s[j] <= '9' {
		j++
	}
	if j == i {
		if i >= len(s) {
			return i, 0, &SyntaxError{Offset: open, Msg: "unclosed '['"}
		}
		return i, 0, &SyntaxError{Offset: i, Msg: fmt.Sprintf("unexpected %q; a list index must be a non-negative integer", s[i])}
	}
	if j >= len(s) || s[j] != ']' {
		if j >= len(s) {
			return j, 0, &SyntaxError{Offset: open, Msg: "unclosed '['"}
		}
		return j, 0, &SyntaxError{Offset: j, Msg: fmt.Sprintf("unexpected %q; expected ']'", s[j])}
	}
	idx, err := strconv.Atoi(s[i:j])
	if err != nil {
		return j, 0, &SyntaxError{Offset: i, Msg: "list index is too large"}
	}
	return j + 1, idx, nil
}

// String formats p so that Parse(p.String()) returns an equal path, for
// every path Parse can return: a.b[0].c.
func (p Path) String() string {
	var b strings.Builder
	p.writeTo(&b, len(p))
	return b.String()
}

// Suffix formats p as it follows a root's name in a message: .a.b[0].c
// (String with a leading dot before a first key); empty for an empty path.
func (p Path) Suffix() string {
	if len(p) == 0 || p[0].IsIndex {
		return p.String()
	}
	return "." + p.String()
}

// writeTo writes the first n segments of p.
func (p Path) writeTo(b *strings.Builder, n int) {
	for i, s := range p[:n] {
		switch {
		case s.IsIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.Index))
			b.WriteByte(']')
		case i > 0:
			b.WriteByte('.')
			b.WriteString(s.Key)
		default:
			b.WriteString(s.Key)
		}
	}
}

// Equal reports whether p and q have the same segments.
func (p Path) Equal(q Path) bool {
	if len(p) != len(q) {
		return false
	}
	for i := range p {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}
