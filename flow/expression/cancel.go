package expression

import (
	"context"

	"github.com/expr-lang/expr/ast"
)

// Cancellation. expr's VM never looks at a context, and its loops are the
// predicates of all, any, filter, map, … (nested ones multiply: three
// levels over 10,000 items are 10^12 steps). Every predicate body is
// compiled wrapped in a call to tickFunc, which checks the context the
// evaluation put in the env under ctxName and stops the program with its
// cause. Expressions without predicates run in time linear in their input
// and are not wrapped.

const (
	// Users cannot reach either: the walker rejects every call that is not
	// a whitelisted builtin, and ctxName is not an identifier.
	tickFunc = "rein_tick"
	ctxName  = "rein ctx"
)

// tick returns its second argument, or the cause of its first argument's
// cancellation.
func tick(params ...any) (any, error) {
	if ctx, ok := params[0].(context.Context); ok && ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return params[1], nil
}

// tickPatch wraps every predicate body in a call of tickFunc(ctxName, body).
type tickPatch struct{}

func (tickPatch) Visit(n *ast.Node) {
	p, ok := (*n).(*ast.PredicateNode)
	if !ok {
		return
	}
	if c, ok := p.Node.(*ast.CallNode); ok {
		if id, ok := c.Callee.(*ast.IdentifierNode); ok && id.Value == tickFunc {
			return // already wrapped
		}
	}
	call := &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: tickFunc},
		Arguments: []ast.Node{&ast.IdentifierNode{Value: ctxName}, p.Node},
	}
	call.SetLocation(p.Node.Location())
	call.Callee.SetLocation(p.Node.Location())
	call.Arguments[0].SetLocation(p.Node.Location())
	p.Node = call
}

// hasPredicate reports whether the tree holds a predicate.
func hasPredicate(n ast.Node) bool {
	found := false
	ast.Walk(&n, visitFunc(func(n *ast.Node) {
		if _, ok := (*n).(*ast.PredicateNode); ok {
			found = true
		}
	}))
	return found
}

type visitFunc func(*ast.Node)

func (f visitFunc) Visit(n *ast.Node) { f(n) }
