package expression

import (
	"github.com/expr-lang/expr/ast"

	"github.com/reinhq/rein/flow/ref"
)

// walker checks a parsed tree for forbidden calls and collects its
// references. It stops checking at the first error.
type walker struct {
	src   string
	bound []string // let-variables in scope
	sites []Ref
	err   *Error
}

func (w *walker) offset(n ast.Node) int {
	return runeToByte(w.src, n.Location().From)
}

func (w *walker) fail(n ast.Node, format string, args ...any) {
	if w.err == nil {
		w.err = newError(w.src, w.offset(n), format, args...)
	}
}

func (w *walker) isBound(name string) bool {
	for _, b := range w.bound {
		if b == name {
			return true
		}
	}
	return false
}

func (w *walker) visit(n ast.Node) {
	if n == nil || w.err != nil {
		return
	}
	switch n := n.(type) {
	case *ast.IdentifierNode:
		w.identifier(n, nil)
	case *ast.MemberNode:
		w.member(n)
	case *ast.ChainNode:
		w.visit(n.Node)
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok {
			w.fail(n, "function %s is not allowed; allowed: %s", id.Value, allowedList)
		} else {
			if m, ok := n.Callee.(*ast.MemberNode); ok {
				w.visit(m.Node) // report a forbidden call inside the receiver first
			}
			w.fail(n.Callee, "method calls are not allowed; allowed functions: %s", allowedList)
		}
	case *ast.BuiltinNode:
		if !isAllowed(n.Name) {
			w.fail(n, "function %s is not allowed; allowed: %s", n.Name, allowedList)
			return
		}
		for _, a := range n.Arguments {
			w.visit(a)
		}
	case *ast.VariableDeclaratorNode:
		w.visit(n.Value)
		w.bound = append(w.bound, n.Name)
		w.visit(n.Expr)
		w.bound = w.bound[:len(w.bound)-1]
	case *ast.UnaryNode:
		w.visit(n.Node)
	case *ast.BinaryNode:
		w.visit(n.Left)
		w.visit(n.Right)
	case *ast.SliceNode:
		w.visit(n.Node)
		w.visit(n.From)
		w.visit(n.To)
	case *ast.PredicateNode:
		w.visit(n.Node)
	case *ast.SequenceNode:
		for _, c := range n.Nodes {
			w.visit(c)
		}
	case *ast.ConditionalNode:
		w.visit(n.Cond)
		w.visit(n.Exp1)
		w.visit(n.Exp2)
	case *ast.ArrayNode:
		for _, c := range n.Nodes {
			w.visit(c)
		}
	case *ast.MapNode:
		for _, c := range n.Pairs {
			w.visit(c)
		}
	case *ast.PairNode:
		w.visit(n.Key)
		w.visit(n.Value)
	}
	// literals and predicate pointers hold no references
}

// identifier records id followed by the segments rev (in reverse order).
func (w *walker) identifier(id *ast.IdentifierNode, rev []ref.Segment) {
	if id.Value == "$env" {
		w.fail(id, "$env is not allowed; refer to names directly")
		return
	}
	if w.isBound(id.Value) {
		return
	}
	if isAllowed(id.Value) {
		w.fail(id, "%s is a function; it cannot be used as a name (call it as %s(...))", id.Value, id.Value)
		return
	}
	p := make(ref.Path, 0, 1+len(rev))
	p = append(p, ref.Segment{Key: id.Value})
	for i := len(rev) - 1; i >= 0; i-- {
		p = append(p, rev[i])
	}
	w.sites = append(w.sites, Ref{Path: p, Offset: w.offset(id)})
}

// member follows a chain of field and index accesses down to its base. A
// dynamic property ends the chain collected so far and is visited itself.
func (w *walker) member(n *ast.MemberNode) {
	var rev []ref.Segment
	var cur ast.Node = n
	for {
		if c, ok := cur.(*ast.ChainNode); ok {
			cur = c.Node
			continue
		}
		m, ok := cur.(*ast.MemberNode)
		if !ok {
			break
		}
		switch prop := m.Property.(type) {
		case *ast.StringNode:
			rev = append(rev, ref.Segment{Key: prop.Value})
		case *ast.IntegerNode:
			if prop.Value >= 0 {
				rev = append(rev, ref.Segment{Index: prop.Value, IsIndex: true})
			} else {
				rev = rev[:0]
			}
		default:
			rev = rev[:0]
			w.visit(m.Property)
		}
		cur = m.Node
	}
	if id, ok := cur.(*ast.IdentifierNode); ok {
		w.identifier(id, rev)
		return
	}
	w.visit(cur)
}
