package expression

import (
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/reinhq/rein/flow/ref"
)

const (
	// MaxSourceLen is the longest source Compile accepts, in bytes.
	MaxSourceLen = 2048
	// MaxNodes is the largest syntax tree Compile accepts, in nodes.
	MaxNodes = 500
)

// allowed is the whitelist of deterministic, pure builtins, sorted.
var allowed = []string{
	"abs", "all", "any", "ceil", "count", "filter", "first", "float", "floor",
	"hasPrefix", "hasSuffix", "indexOf", "int", "join", "keys", "last", "len",
	"lower", "map", "max", "mean", "min", "none", "one", "replace", "round",
	"split", "string", "sum", "trim", "trimPrefix", "trimSuffix", "type",
	"upper", "values",
}

var allowedList = strings.Join(allowed, ", ")

// Allowed returns the names of the functions expressions may call, sorted.
func Allowed() []string { return slices.Clone(allowed) }

func isAllowed(name string) bool {
	_, ok := slices.BinarySearch(allowed, name)
	return ok
}

// options are the expr options every program is compiled with: the env is
// an untyped map[string]any whose names are looked up at run time (a
// missing name is nil; declaring the map type lets expr load top-level
// names without reflection), every builtin off but the whitelist, and a
// node budget; predicates check the context (tickPatch), and the builtins
// and operators that scan or copy their operands are bounded (guardPatch).
var options = func() []expr.Option {
	opts := []expr.Option{expr.Env(map[string]any{}), expr.AllowUndefinedVariables(), expr.DisableAllBuiltins(), expr.MaxNodes(MaxNodes),
		expr.Function(tickFunc, tick, new(func(any, any) any)), expr.Patch(tickPatch{}),
		expr.Function(guardFunc, guard, new(func(any, string, int, any) any)),
		expr.Function(replaceFunc, replaceBuiltin), expr.Function(joinFunc, joinBuiltin),
		expr.Function(matchesFunc, matchesBuiltin, new(func(any, any, any) bool)), expr.Patch(guardPatch{})}
	for _, name := range allowed {
		opts = append(opts, expr.EnableBuiltin(name))
	}
	return opts
}()

// Ref is one reference occurrence in a program, with the byte offset of its
// root identifier in the original source.
type Ref struct {
	Path   ref.Path
	Offset int
}

// Program is a compiled expression. It is immutable and safe for
// concurrent use.
type Program struct {
	src   string
	prog  *vm.Program
	sites []Ref
	refs  []ref.Path
	// ticks is true when the program has predicates (all, filter, map, …)
	// or guarded operations (string, split, matches, +, …): only those can
	// run long, and only those check for cancellation.
	ticks bool
	// roots are the names the program reads from its env, without
	// duplicates: all it can read (the walker rejects $env).
	roots []string
}

// Compile compiles src. It rejects sources longer than MaxSourceLen bytes
// or larger than MaxNodes nodes, syntax and type errors, calls to any
// function not in Allowed (naming it), method calls and $env. Every error
// is an *Error whose Offset points into src. The result type is not
// checked here: Eval requires a boolean, EvalValue accepts anything.
func Compile(src string) (*Program, error) {
	if len(src) > MaxSourceLen {
		return nil, &Error{Offset: MaxSourceLen, Msg: "expression is " + itoa(len(src)) + " bytes long; the limit is " + itoa(MaxSourceLen)}
	}
	if strings.TrimSpace(src) == "" {
		return nil, newError(src, 0, "empty expression")
	}
	rewritten, err := rewriteBraces(src)
	if err != nil {
		return nil, err
	}

	cfg := conf.CreateNew()
	for _, opt := range options {
		opt(cfg)
	}
	tree, err := parser.ParseWithConfig(rewritten, cfg)
	if err != nil {
		return nil, fromExpr(src, err)
	}
	w := walker{src: src}
	w.visit(tree.Node)
	if w.err != nil {
		return nil, w.err
	}

	prog, err := expr.Compile(rewritten, options...)
	if err != nil {
		return nil, fromExpr(src, err)
	}
	p := &Program{src: src, prog: prog, sites: w.sites, ticks: hasPredicate(tree.Node) || hasGuard(tree.Node)}
	slices.SortStableFunc(p.sites, func(a, b Ref) int { return a.Offset - b.Offset })
	seen := make(map[string]bool, len(p.sites))
	for _, s := range p.sites {
		if k := s.Path.String(); !seen[k] {
			seen[k] = true
			p.refs = append(p.refs, s.Path)
		}
		if root := s.Path[0].Key; !slices.Contains(p.roots, root) {
			p.roots = append(p.roots, root)
		}
	}
	return p, nil
}

// MustCompile is like Compile but panics on error; it is meant for
// constants in code and tests.
func MustCompile(src string) *Program {
	p, err := Compile(src)
	if err != nil {
		panic("expression.MustCompile(" + src + "): " + err.Error())
	}
	return p
}

// Source returns the source as given to Compile.
func (p *Program) Source() string { return p.src }

// Refs returns every reference chain rooted at a free identifier, without
// duplicates, in order of first appearance: "a.b[0].c", "a[\"b\"]" as
// a.b, "x" alone. A dynamic index ends a chain (a[i].b gives a and i);
// predicate pointers (#, .field) and let-variables are not references.
// The slice is a copy.
func (p *Program) Refs() []ref.Path { return slices.Clone(p.refs) }

// RefSites returns every reference occurrence, duplicates included, in
// source order, with the byte offset of its root identifier, so that a
// validator can point at the exact spot. The slice is a copy.
func (p *Program) RefSites() []Ref { return slices.Clone(p.sites) }

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
