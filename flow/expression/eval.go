package expression

import (
	"context"
	"fmt"
	"sync"

	"github.com/expr-lang/expr/vm"

	"github.com/reinhq/rein/flow/ref"
)

var vms = sync.Pool{New: func() any { return new(vm.VM) }}

// EvalValue runs the program against env and returns its result, which may
// be of any type (numbers computed by expr may be int or float64). A
// missing name evaluates to nil. Run-time failures, such as reading a field
// of nil or exceeding expr's memory budget, are returned as an *Error with
// the offset of the failing operation; they never panic.
func (p *Program) EvalValue(env map[string]any) (any, error) {
	return p.EvalValueContext(context.Background(), env)
}

// EvalValueContext is EvalValue that stops when ctx ends: before it starts,
// inside every loop (the predicates of all, any, filter, map, …) and
// before every operation that scans or copies a value (string, split,
// matches, +, …; each takes at most MaxOperandBytes, see guard.go), so a
// program over large inputs stops within milliseconds of ctx's end. It
// then returns context.Cause(ctx), unwrapped. An operand larger than
// MaxOperandBytes is an *Error at that operand, whatever ctx.
func (p *Program) EvalValueContext(ctx context.Context, env map[string]any) (any, error) {
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if p.ticks {
		// the names the program reads, and the context, in a map of their
		// own: env is the caller's, and may be large.
		withCtx := make(map[string]any, len(p.roots)+1)
		for _, k := range p.roots {
			if v, ok := env[k]; ok {
				withCtx[k] = v
			}
		}
		withCtx[ctxName] = ctx
		env = withCtx
	}
	m := vms.Get().(*vm.VM)
	out, err := m.Run(p.prog, env)
	clear(m.Stack)
	clear(m.Variables)
	vms.Put(m)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fromExpr(p.src, err)
	}
	return out, nil
}

// Eval runs the program against env and requires a boolean result; any
// other result is an *Error naming the type it got. Errors are as for
// EvalValue.
func (p *Program) Eval(env map[string]any) (bool, error) {
	return p.EvalContext(context.Background(), env)
}

// EvalContext is Eval that stops when ctx ends, as EvalValueContext.
func (p *Program) EvalContext(ctx context.Context, env map[string]any) (bool, error) {
	out, err := p.EvalValueContext(ctx, env)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, newError(p.src, 0, "expression must evaluate to a boolean, got %s", describe(out))
	}
	return b, nil
}

// describe names the type of v and shows short scalars.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return fmt.Sprintf("a string (%q)", x)
	case float64, float32, int, int64, int32, uint, uint64:
		return fmt.Sprintf("a number (%v)", x)
	default:
		return ref.TypeName(v)
	}
}
