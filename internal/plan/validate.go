package plan

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow/ref"
	"github.com/reinhq/rein/value/schema"
)

// maxProblems bounds how many problems a ValidationError lists.
const maxProblems = 100

// ValidationError is a plan Validate rejected, with every problem and its
// JSON pointer into the plan (e.g. /steps/2/args/celsius). A plan longer
// than the catalog's MaxSteps unwraps to a budget error naming max_steps
// (fault.BudgetOf); any other invalid plan unwraps to a format error.
type ValidationError struct {
	Problems []Problem
	cause    error
}

// Error reads like `plan is invalid: at /steps/1/id: duplicate step id "weather" (/steps/0 has it)`.
func (e *ValidationError) Error() string { return "plan is invalid: " + joinProblems(e.Problems) }

// Unwrap returns the classed cause: fault.Budget (max_steps) or fault.Format.
func (e *ValidationError) Unwrap() error { return e.cause }

// Validate checks p against c before anything runs and returns nil or a
// *ValidationError listing every problem: the plan has steps, at most
// c.MaxSteps of them; ids are unique and name-like; each tool is known,
// allowed and not a plan tool; depends_on and $ref name only earlier steps
// (or completed ones) — so a cycle is impossible; each $ref path is declared
// by the referenced tool's output schema (a tool without one may only be
// referenced whole) and its declared type fits the input property it feeds;
// the literal args satisfy the tool's input schema. completed are the steps
// already done in this run (on a replan): a new step may reference them, and
// a step listed again with the same id and tool is reused, not run.
func Validate(p *Plan, c *Catalog, completed ...StepResult) error {
	if _, err := analyze(p, c, completed); err != nil {
		return err
	}
	return nil
}

// analysis is what the executor needs from validation.
type analysis struct {
	steps []stepInfo
}

type stepInfo struct {
	entry  *entry
	reused bool
	deps   []int // earlier steps of this plan it waits for, ascending
	refs   []argRef
}

type validator struct {
	p      *Plan
	c      *Catalog
	done   map[string]string // completed id → tool
	index  map[string]int    // id → first index
	probs  []Problem
	extra  int
	info   []stepInfo
	refBuf []argRef // backs every step's refs
	depBuf []int    // backs every step's deps
	segBuf [8]ref.Segment
	cycles [][2]int // forward edges (each a problem already)
}

func (v *validator) add(ptr, format string, args ...any) {
	if len(v.probs) >= maxProblems {
		v.extra++
		return
	}
	v.probs = append(v.probs, Problem{Pointer: ptr, Message: fmt.Sprintf(format, args...)})
}

func analyze(p *Plan, c *Catalog, completed []StepResult) (*analysis, *ValidationError) {
	if c == nil {
		return nil, &ValidationError{Problems: []Problem{{Message: "no tool catalog to validate the plan against"}}, cause: fault.Errorf(fault.Business, "plan: nil catalog")}
	}
	if p == nil {
		return nil, &ValidationError{Problems: []Problem{{Message: "no plan"}}, cause: fault.Errorf(fault.Format, "plan: nil plan")}
	}
	v := &validator{p: p, c: c, index: make(map[string]int, len(p.Steps))}
	if len(completed) > 0 {
		v.done = make(map[string]string, len(completed))
		for _, r := range completed {
			v.done[r.ID] = r.Tool
		}
	}
	var budget error
	switch n := len(p.Steps); {
	case n == 0:
		v.add("/steps", "the plan has no steps: give at least one")
	case n > c.maxSteps:
		v.add("/steps", "the plan has %d steps, more than max_steps=%d: plan fewer, larger steps", n, c.maxSteps)
		budget = fault.BudgetErr("max_steps", "the plan has %d steps, more than max_steps=%d", n, c.maxSteps)
	}
	v.info = make([]stepInfo, len(p.Steps))
	v.refBuf = make([]argRef, 0, 2*len(p.Steps))
	v.depBuf = make([]int, 0, 2*len(p.Steps))
	v.ids()
	for i := range p.Steps {
		v.step(i)
	}
	v.reportCycles()
	if len(v.probs) == 0 {
		return &analysis{steps: v.info}, nil
	}
	slices.SortStableFunc(v.probs, func(a, b Problem) int { return cmp.Compare(stepOf(a.Pointer), stepOf(b.Pointer)) })
	if v.extra > 0 {
		v.probs = append(v.probs, Problem{Message: fmt.Sprintf("… and %d more problems", v.extra)})
	}
	if budget == nil {
		budget = fault.Errorf(fault.Format, "the plan is invalid")
	}
	return nil, &ValidationError{Problems: v.probs, cause: budget}
}

// stepOf returns the step index a pointer is under, or -1.
func stepOf(ptr string) int {
	rest, ok := strings.CutPrefix(ptr, "/steps/")
	if !ok {
		return -1
	}
	if k := strings.IndexByte(rest, '/'); k >= 0 {
		rest = rest[:k]
	}
	n, err := strconv.Atoi(rest)
	if err != nil {
		return -1
	}
	return n
}

func stepPtr(i int) string { return "/steps/" + strconv.Itoa(i) }

func (v *validator) ids() {
	for i := range v.p.Steps {
		s := &v.p.Steps[i]
		ptr := func() string { return stepPtr(i) + "/id" }
		switch {
		case s.ID == "":
			v.add(ptr(), "a step needs an id")
			continue
		case !ref.IsKey(s.ID):
			v.add(ptr(), "step id %q must be letters, digits, _ or - and start with a letter or _, so that $ref can name it", s.ID)
		}
		if j, dup := v.index[s.ID]; dup {
			v.add(ptr(), "duplicate step id %q (%s has it): give every step its own id", s.ID, stepPtr(j))
			continue
		}
		v.index[s.ID] = i
		if t, ok := v.done[s.ID]; ok {
			if t == s.Tool {
				v.info[i].reused = true
			} else {
				v.add(ptr(), "step id %q already completed with tool %s: reference it with $ref, or give the new step another id", s.ID, t)
			}
		}
	}
}

func (v *validator) step(i int) {
	s := &v.p.Steps[i]
	if v.info[i].reused {
		return
	}
	v.info[i].entry = v.tool(s.Tool, i)
	depStart := len(v.depBuf)
	for k, d := range s.DependsOn {
		dptr := func() string { return stepPtr(i) + "/depends_on/" + strconv.Itoa(k) }
		if slices.Contains(s.DependsOn[:k], d) {
			v.add(dptr(), "depends_on lists %q twice", d)
			continue
		}
		v.root(i, d, dptr, "")
	}
	info := &v.info[i]
	if s.Args != nil {
		start := len(v.refBuf)
		findRefs(any(s.Args), v.segBuf[:0], func(at []ref.Segment, p, raw string, path ref.Path) {
			v.refBuf = append(v.refBuf, argRef{ptr: p, path: path, raw: raw})
			v.ref(i, &v.refBuf[len(v.refBuf)-1], at)
		}, func(p, msg string) { v.add(stepPtr(i)+"/args"+p, "%s", msg) })
		info.refs = v.refBuf[start:len(v.refBuf):len(v.refBuf)]
	}
	deps := v.depBuf[depStart:len(v.depBuf):len(v.depBuf)]
	slices.Sort(deps)
	info.deps = slices.Compact(deps)
	v.literals(i)
	v.declaration(i)
}

// declaration checks that the facts of step i's declaration cite tools
// that exist: a fact's source tool:<name> names a tool of the catalog.
func (v *validator) declaration(i int) {
	d := v.p.Steps[i].Declaration
	if d == nil {
		return
	}
	for k, f := range d.Facts {
		name, ok := strings.CutPrefix(f.Source, "tool:")
		if !ok || v.c.lookup(name) != nil {
			continue
		}
		v.add(stepPtr(i)+"/declaration/facts/"+strconv.Itoa(k)+"/source", "source %q names no tool (tools: %s)%s; cite the tool whose output states the fact, user for the user's words, or db for a read",
			f.Source, strings.Join(v.c.names, ", "), didYouMean(name, v.c.names))
	}
}

func (v *validator) tool(name string, i int) *entry {
	c := v.c
	if c.allowed[name] {
		return c.lookup(name)
	}
	ptr := stepPtr(i) + "/tool"
	switch {
	case name == "":
		v.add(ptr, "a step needs a tool (allowed: %s)", strings.Join(c.names, ", "))
	case c.shared.planTools[name]:
		v.add(ptr, "tool %q runs plans itself and cannot be used inside a plan: plans do not nest; put its steps in this plan instead", name)
	case c.lookup(name) == nil:
		v.add(ptr, "unknown tool %q (allowed: %s)%s", name, strings.Join(c.names, ", "), didYouMean(name, c.names))
	default:
		v.add(ptr, "tool %q is not allowed in this plan (allowed: %s)", name, strings.Join(c.names, ", "))
	}
	return nil
}

// root resolves a step id used by step i in depends_on (raw == "") or as
// the root of $ref raw. It returns the entry of the referenced step's tool
// (nil when unknown) and whether the id is usable.
func (v *validator) root(i int, id string, ptr func() string, raw string) (*entry, bool) {
	if t, ok := v.done[id]; ok {
		return v.c.lookup(t), true
	}
	what := func() string {
		if raw == "" {
			return "depends on"
		}
		return "$ref " + strconv.Quote(raw) + " uses"
	}
	j, ok := v.index[id]
	switch {
	case ok && j == i:
		if raw == "" {
			v.add(ptr(), "step %q depends on itself", id)
		} else {
			v.add(ptr(), "%s the output of its own step %q", what(), id)
		}
	case ok && j > i:
		v.cycles = append(v.cycles, [2]int{i, j})
		v.add(ptr(), "%s step %q, which comes later (%s): a step may only use earlier steps, so move %q before this one", what(), id, stepPtr(j), id)
	case ok:
		v.depBuf = append(v.depBuf, j)
		return v.info[j].entry, true
	default:
		var known []string
		for k := 0; k < i; k++ {
			known = append(known, v.p.Steps[k].ID)
		}
		for d := range v.done {
			known = append(known, d)
		}
		slices.Sort(known)
		v.add(ptr(), "%s unknown step %q%s", what(), id, didYouMean(id, known))
	}
	return nil, false
}

func (v *validator) ref(i int, r *argRef, at []ref.Segment) {
	ptrOf := func() string { return stepPtr(i) + "/args" + r.ptr }
	target, ok := v.root(i, r.path[0].Key, ptrOf, r.raw)
	if !ok || target == nil {
		return
	}
	var out schema.Type
	switch {
	case target.out == nil && len(r.path) > 1:
		v.add(ptrOf(), "$ref %q: tool %s declares no output schema, so only its whole output can be used ({\"$ref\": %q})", r.raw, target.spec.Name, r.path[0].Key)
		return
	case target.out != nil:
		var msg string
		out, msg = v.c.schemaAt(target, false, r.path[1:], r.raw[len(r.path[0].Key):], r.path[0].Key)
		if msg != "" {
			v.add(ptrOf(), "$ref %q: %s (output of tool %s)", r.raw, msg, target.spec.Name)
			return
		}
	}
	self := v.info[i].entry
	if self == nil || self.in == nil {
		return
	}
	in, inMsg := v.c.schemaAt(self, true, at, r.ptr, "args")
	if inMsg != "" {
		return // the literal check reports args the schema does not take
	}
	r.fill = placeholder(in)
	if !compatible(out, in) {
		v.add(ptrOf(), "$ref %q gives %s, but tool %s wants %s here", r.raw, out, self.spec.Name, in)
	}
}

// literals validates the step's args against its tool's input schema, each
// reference standing in as null and violations at or below a reference
// ignored (the reference's type is checked by ref; the resolved args are
// validated in full before the call).
func (v *validator) literals(i int) {
	info := &v.info[i]
	if info.entry == nil || info.entry.in == nil {
		return
	}
	var args any = v.p.Steps[i].Args
	if v.p.Steps[i].Args == nil {
		args = map[string]any{}
	}
	if q := info.entry.inQ; q != nil && q.valid(args, true) {
		return
	}
	if len(info.refs) > 0 {
		args, _, _ = substitute(args, func(raw string) (any, error) {
			for k := range info.refs {
				if info.refs[k].raw == raw {
					return info.refs[k].fill, nil
				}
			}
			return nil, nil
		})
	}
	err := info.entry.in.Validate(args)
	if err == nil {
		return
	}
	var se *schema.Error
	if !errors.As(err, &se) {
		v.add(stepPtr(i)+"/args", "%v", err)
		return
	}
	for _, viol := range se.Violations {
		if underRef(viol.Pointer, info.refs) {
			continue
		}
		v.add(stepPtr(i)+"/args"+viol.Pointer, "%s (input schema of tool %s)", viol.Message, info.entry.spec.Name)
	}
}

// placeholder returns a value of one of the types in bits (nil for none).
func placeholder(bits schema.Type) any {
	switch {
	case bits&(schema.Number|schema.Integer) != 0:
		return 0.0
	case bits&schema.String != 0:
		return ""
	case bits&schema.Boolean != 0:
		return false
	case bits&schema.Object != 0:
		return map[string]any{}
	case bits&schema.Array != 0:
		return []any{}
	}
	return nil
}

func underRef(ptr string, refs []argRef) bool {
	for _, r := range refs {
		if ptr == r.ptr || strings.HasPrefix(ptr, r.ptr+"/") {
			return true
		}
	}
	return false
}

// reportCycles adds, for each forward edge that closes a cycle, the cycle.
func (v *validator) reportCycles() {
	for _, e := range v.cycles {
		if path := v.pathBetween(e[1], e[0]); path != nil {
			ids := make([]string, 0, len(path)+1)
			ids = append(ids, v.p.Steps[e[0]].ID)
			for _, k := range path {
				ids = append(ids, v.p.Steps[k].ID)
			}
			v.add(stepPtr(e[0]), "steps form a cycle: %s", strings.Join(ids, " → "))
			return
		}
	}
}

// pathBetween returns the steps from a to b along declared edges (a
// included), or nil.
func (v *validator) pathBetween(a, b int) []int {
	prev := map[int]int{a: -1}
	queue := []int{a}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == b {
			var path []int
			for k := n; k != -1; k = prev[k] {
				path = append(path, k)
			}
			slices.Reverse(path)
			return path
		}
		next := v.info[n].deps
		for _, c := range v.cycles {
			if c[0] == n {
				next = append(slices.Clone(next), c[1])
			}
		}
		for _, m := range next {
			if _, seen := prev[m]; !seen {
				prev[m] = n
				queue = append(queue, m)
			}
		}
	}
	return nil
}
