package expression

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm/runtime"
	"github.com/reinhq/rein/value"
)

// Bounds of the work outside predicates. A builtin such as string, split
// or replace, and the operators matches and +, run in Go without a look
// at the context: over 36 MB they took seconds, and replace or join could
// multiply their input. So every operand of those is guarded: guardFunc
// checks the context before the operation, then the operand's size
// against MaxOperandBytes; replace and join are rein's own (replaceFunc,
// joinFunc), which refuse a result larger than MaxOperandBytes before
// they build it. Each guarded operation then runs over at most
// MaxOperandBytes, which takes milliseconds, so a program notices the end
// of its context between two of them.

// MaxOperandBytes is the largest value (as JSON, about) that a builtin or
// operator that scans or copies its operands may take: string, split,
// join, replace, lower, upper, trim, trimPrefix, trimSuffix, indexOf,
// hasPrefix, hasSuffix, int, float, sum, mean, min, max, keys, values,
// matches and +; and the longest string replace and join may make. Larger
// values can still be read, compared, counted (len) and iterated by
// predicates, which check the context at every item.
const MaxOperandBytes = 1 << 20

// MaxPatternBytes is the longest pattern matches takes from a value (a
// pattern written in the source is bounded by MaxSourceLen): a regular
// expression's matching time grows with its length.
const MaxPatternBytes = 4096

const (
	guardFunc   = "rein_guard"
	replaceFunc = "rein_replace"
	joinFunc    = "rein_join"
	matchesFunc = "rein_matches"
)

// guarded are the builtins whose operands guardFunc checks.
var guarded = map[string]bool{
	"string": true, "split": true, "lower": true, "upper": true, "trim": true, "trimPrefix": true,
	"trimSuffix": true, "indexOf": true, "hasPrefix": true, "hasSuffix": true, "int": true,
	"float": true, "sum": true, "mean": true, "min": true, "max": true, "keys": true, "values": true,
}

// guardedOps are the binary operators whose operands guardFunc checks
// (matches is turned into matchesFunc, whose operands are guarded too).
var guardedOps = map[string]bool{"matches": true, "+": true}

// asyncMatch is the length of text from which matchesBuiltin matches on a
// goroutine of its own, so that it can return when the context ends.
const asyncMatch = 64 << 10

// matchesBuiltin is matchesFunc(ctx, s, pattern): whether s matches the
// pattern (a *regexp.Regexp compiled from the source, or a string). Over
// a long text the match runs on its own goroutine, which reads only s and
// the pattern, and the call returns the context's cause when ctx ends
// first; the abandoned match finishes on its own (it is linear in s, at
// most MaxOperandBytes) and its answer is dropped.
func matchesBuiltin(params ...any) (any, error) {
	ctx, _ := params[0].(context.Context)
	s, ok := params[1].(string)
	if !ok {
		return nil, fmt.Errorf("matches takes a string on its left, got %s", typeOf(params[1]))
	}
	re, ok := params[2].(*regexp.Regexp)
	if !ok {
		pat, ok := params[2].(string)
		if !ok {
			return nil, fmt.Errorf("matches takes a string pattern on its right, got %s", typeOf(params[2]))
		}
		var err error
		if re, err = regexp.Compile(pat); err != nil {
			return nil, err
		}
	}
	if ctx == nil || ctx.Done() == nil || len(s) < asyncMatch {
		return re.MatchString(s), nil
	}
	done := make(chan bool, 1)
	go func() { done <- re.MatchString(s) }()
	select {
	case ok := <-done:
		return ok, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// guard is guardFunc(ctx, what, limit, v): v, unless ctx ended (its
// cause) or v is larger than limit bytes (an error naming what).
func guard(params ...any) (any, error) {
	if ctx, ok := params[0].(context.Context); ok && ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	v := params[3]
	if limit := int64(params[2].(int)); sizeOf(v, limit+1) > limit {
		return nil, tooLarge(params[1].(string), limit)
	}
	return v, nil
}

// replaceBuiltin is expr's replace(s, old, new[, n]), refusing a result of
// more than MaxOperandBytes before it is built.
func replaceBuiltin(params ...any) (any, error) {
	if len(params) != 4 && len(params) != 5 {
		return nil, fmt.Errorf("replace takes 3 or 4 arguments, got %d", len(params)-1)
	}
	if ctx, ok := params[0].(context.Context); ok && ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	s, ok1 := params[1].(string)
	old, ok2 := params[2].(string)
	repl, ok3 := params[3].(string)
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("replace takes strings, got %s, %s, %s", typeOf(params[1]), typeOf(params[2]), typeOf(params[3]))
	}
	n := -1
	if len(params) == 5 {
		n = runtime.ToInt(params[4])
	}
	count := 0
	switch {
	case len(s) > MaxOperandBytes:
		return nil, tooLarge("replace", MaxOperandBytes)
	case old == "":
		count = utf8.RuneCountInString(s) + 1
	default:
		count = strings.Count(s, old)
	}
	if n >= 0 {
		count = min(count, n)
	}
	if size := int64(len(s)) + int64(count)*int64(len(repl)-len(old)); size > MaxOperandBytes {
		return nil, fmt.Errorf("replace would make %d bytes, more than the %d an expression may make at once; replace in a smaller part", size, MaxOperandBytes)
	}
	return strings.Replace(s, old, repl, n), nil
}

// joinBuiltin is expr's join(list[, glue]), refusing a result of more than
// MaxOperandBytes before it is built.
func joinBuiltin(params ...any) (any, error) {
	if len(params) != 2 && len(params) != 3 {
		return nil, fmt.Errorf("join takes 1 or 2 arguments, got %d", len(params)-1)
	}
	if ctx, ok := params[0].(context.Context); ok && ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	glue := ""
	if len(params) == 3 {
		g, ok := params[2].(string)
		if !ok {
			return nil, fmt.Errorf("join's glue must be a string, got %s", typeOf(params[2]))
		}
		glue = g
	}
	var parts []string
	switch l := params[1].(type) {
	case []string:
		parts = l
	case []any:
		parts = make([]string, 0, len(l))
		for _, e := range l {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("join takes a list of strings, got %s in it", typeOf(e))
			}
			parts = append(parts, s)
		}
	default:
		return nil, fmt.Errorf("join takes a list of strings, got %s", typeOf(params[1]))
	}
	size := int64(0)
	for k, p := range parts {
		if size += int64(len(p)); k > 0 {
			size += int64(len(glue))
		}
		if size > MaxOperandBytes {
			return nil, fmt.Errorf("join would make more than the %d bytes an expression may make at once; join fewer or shorter parts", MaxOperandBytes)
		}
	}
	return strings.Join(parts, glue), nil
}

// tooLarge is the error of an operand of what larger than limit bytes.
func tooLarge(what string, limit int64) error {
	return fmt.Errorf("%s: this value is more than %d bytes, the most an expression may scan or copy at once; pass a smaller part of it (a field, or s[:n])", what, limit)
}

func typeOf(v any) string { return fmt.Sprintf("%T", v) }

// sizeOf is about how many bytes v takes as JSON (a string counts its
// bytes alone, so text of max_input_bytes fits), or a number above limit
// as soon as it passes limit (value.JSONSize), so the walk is bounded by
// limit.
func sizeOf(v any, limit int64) int64 {
	if s, ok := v.(string); ok {
		return int64(len(s))
	}
	return value.JSONSize(v, limit)
}

// guardPatch wraps the operands of the guarded builtins and operators in
// guardFunc, and turns replace and join into replaceFunc and joinFunc.
type guardPatch struct{}

func (guardPatch) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.BuiltinNode:
		switch {
		case x.Name == "replace" || x.Name == "join":
			name := map[string]string{"replace": replaceFunc, "join": joinFunc}[x.Name]
			call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: name},
				Arguments: append([]ast.Node{&ast.IdentifierNode{Value: ctxName}}, x.Arguments...)}
			call.SetLocation(x.Location())
			call.Callee.SetLocation(x.Location())
			call.Arguments[0].SetLocation(x.Location())
			ast.Patch(n, call)
		case guarded[x.Name]:
			for k, a := range x.Arguments {
				if _, ok := a.(*ast.PredicateNode); !ok {
					x.Arguments[k] = guardNode(x.Name, a, MaxOperandBytes)
				}
			}
		}
	case *ast.BinaryNode:
		switch x.Operator {
		case "+":
			x.Left = guardNode(x.Operator, x.Left, MaxOperandBytes)
			x.Right = guardNode(x.Operator, x.Right, MaxOperandBytes)
		case "matches":
			pattern := guardNode("matches (the pattern)", x.Right, MaxPatternBytes)
			if lit, ok := x.Right.(*ast.StringNode); ok {
				re, err := regexp.Compile(lit.Value)
				if err != nil {
					return // left to expr, which reports it at compile time
				}
				pattern = &ast.ConstantNode{Value: re}
				pattern.SetLocation(x.Right.Location())
			}
			call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: matchesFunc},
				Arguments: []ast.Node{&ast.IdentifierNode{Value: ctxName}, guardNode(x.Operator, x.Left, MaxOperandBytes), pattern}}
			call.SetLocation(x.Location())
			call.Callee.SetLocation(x.Location())
			call.Arguments[0].SetLocation(x.Location())
			ast.Patch(n, call)
		}
	}
}

// guardNode is guardFunc(ctxName, what, limit, n), or n itself when it is
// a literal (whose size the source bounds) or already guarded.
func guardNode(what string, n ast.Node, limit int) ast.Node {
	switch x := n.(type) {
	case *ast.StringNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NilNode, *ast.ConstantNode:
		return n
	case *ast.CallNode:
		if id, ok := x.Callee.(*ast.IdentifierNode); ok && id.Value == guardFunc {
			return n
		}
	}
	call := &ast.CallNode{
		Callee: &ast.IdentifierNode{Value: guardFunc},
		Arguments: []ast.Node{&ast.IdentifierNode{Value: ctxName}, &ast.StringNode{Value: what},
			&ast.IntegerNode{Value: limit}, n},
	}
	call.SetLocation(n.Location())
	call.Callee.SetLocation(n.Location())
	for _, a := range call.Arguments[:3] {
		a.SetLocation(n.Location())
	}
	return call
}

// hasGuard reports whether the tree holds an operation guardPatch guards.
func hasGuard(n ast.Node) bool {
	found := false
	ast.Walk(&n, visitFunc(func(n *ast.Node) {
		switch x := (*n).(type) {
		case *ast.BuiltinNode:
			found = found || guarded[x.Name] || x.Name == "replace" || x.Name == "join"
		case *ast.BinaryNode:
			found = found || guardedOps[x.Operator]
		}
	}))
	return found
}
