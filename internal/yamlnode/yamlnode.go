// Package yamlnode holds the small questions rein's YAML readers (flow
// files, routes files, scripted model replies) ask of a go-yaml node: where
// it starts, what kind of value it is, and its text when it is a string.
package yamlnode

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// Start returns where n starts, 1-based: the position of StartNode(n)'s
// token; 1:1 when there is none or it has no position.
func Start(n ast.Node) (line, col int) {
	if n = StartNode(n); n == nil {
		return 1, 1
	}
	return TokenPos(n.GetToken())
}

// StartNode returns the node n visibly starts with: a block mapping's first
// key (a block mapping's own token is the ":" of its first entry), a
// mapping value's key, else n itself.
func StartNode(n ast.Node) ast.Node {
	switch m := n.(type) {
	case *ast.MappingNode:
		if !m.IsFlowStyle && len(m.Values) > 0 && m.Values[0].Key != nil {
			return m.Values[0].Key
		}
	case *ast.MappingValueNode:
		if m.Key != nil {
			return m.Key
		}
	}
	return n
}

// TokenPos returns tk's position, 1-based; 1:1 when tk is nil or has no
// position.
func TokenPos(tk *token.Token) (line, col int) {
	if tk == nil || tk.Position == nil || tk.Position.Line < 1 {
		return 1, 1
	}
	return tk.Position.Line, max(tk.Position.Column, 1)
}

// Entries returns the entries of a mapping node (go-yaml gives a mapping of
// one entry as the bare *ast.MappingValueNode), and false when n is not a
// mapping.
func Entries(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch m := n.(type) {
	case *ast.MappingNode:
		return m.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}, true
	}
	return nil, false
}

// Kind names n's YAML type for messages, with an article: "null", "a
// mapping", "a list", "a string", "a number", "a boolean"; any other node
// by its go-yaml type in lower case ("anchor", "tag", …).
func Kind(n ast.Node) string {
	switch n.(type) {
	case nil, *ast.NullNode:
		return "null"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	}
	return strings.ToLower(n.Type().String())
}

// String returns the text of a plain, quoted or block string node, and
// false for any other node.
func String(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		if v.Value == nil {
			return "", true
		}
		return v.Value.Value, true
	}
	return "", false
}

// NameProblem says what makes s unfit as a name (of a flow, a schema, a
// model, a route): "is not valid UTF-8", "holds a NUL character", "holds
// the control character U+001B"; "" when nothing does. Names are printed
// and used as keys, and a YAML escape ("\0", "\e") can put any of these in
// a quoted string.
func NameProblem(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, r := range s {
		switch {
		case r == 0:
			return "holds a NUL character"
		case unicode.IsControl(r):
			return fmt.Sprintf("holds the control character %U", r)
		}
	}
	return ""
}
