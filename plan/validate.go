package plan

import (
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
	edges  [][]int // all declared edges by index, forward ones included
	cycles [][2]int
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
	v.ids()
	for i := range p.Steps {
		v.step(i)
	}
	v.reportCycles()
	if len(v.probs) == 0 {
		return &analysis{steps: v.info}, nil
	}
	if v.extra > 0 {
		v.probs = append(v.probs, Problem{Message: fmt.Sprintf("… and %d more problems", v.extra)})
	}
	if budget == nil {
		budget = fault.Errorf(fault.Format, "the plan is invalid")
	}
	return nil, &ValidationError{Problems: v.probs, cause: budget}
}

func stepPtr(i int) string { return "/steps/" + strconv.Itoa(i) }

func (v *validator) ids() {
	for i := range v.p.Steps {
		s := &v.p.Steps[i]
		ptr := stepPtr(i) + "/id"
		switch {
		case s.ID == "":
			v.add(ptr, "a step needs an id")
			continue
		case !ref.IsKey(s.ID):
			v.add(ptr, "step id %q must be letters, digits, _ or - and start with a letter or _, so that $ref can name it", s.ID)
		}
		if j, dup := v.index[s.ID]; dup {
			v.add(ptr, "duplicate step id %q (%s has it): give every step its own id", s.ID, stepPtr(j))
			continue
		}
		v.index[s.ID] = i
		if t, ok := v.done[s.ID]; ok {
			if t == s.Tool {
				v.info[i].reused = true
			} else {
				v.add(ptr, "step id %q already completed with tool %s: reference it with $ref, or give the new step another id", s.ID, t)
			}
		}
	}
}

func (v *validator) step(i int) {
	s := &v.p.Steps[i]
	ptr := stepPtr(i)
	v.edges = append(v.edges, nil)
	if v.info[i].reused {
		return
	}
	v.info[i].entry = v.tool(s.Tool, ptr+"/tool")
	for k, d := range s.DependsOn {
		dptr := ptr + "/depends_on/" + strconv.Itoa(k)
		if slices.Contains(s.DependsOn[:k], d) {
			v.add(dptr, "depends_on lists %q twice", d)
			continue
		}
		v.root(i, d, dptr, "depends on")
	}
	info := &v.info[i]
	if s.Args != nil {
		findRefs(any(s.Args), nil, "", &info.refs, func(p, msg string) { v.add(ptr+"/args"+p, "%s", msg) })
	}
	for _, r := range info.refs {
		v.ref(i, r)
	}
	v.literals(i)
	slices.Sort(info.deps)
	info.deps = slices.Compact(info.deps)
}

func (v *validator) tool(name, ptr string) *entry {
	c := v.c
	switch {
	case name == "":
		v.add(ptr, "a step needs a tool (allowed: %s)", strings.Join(c.names, ", "))
	case c.shared.planTools[name]:
		v.add(ptr, "tool %q runs plans itself and cannot be used inside a plan: plans do not nest; put its steps in this plan instead", name)
	case c.lookup(name) == nil:
		v.add(ptr, "unknown tool %q (allowed: %s)%s", name, strings.Join(c.names, ", "), didYouMean(name, c.names))
	case !c.allowed[name]:
		v.add(ptr, "tool %q is not allowed in this plan (allowed: %s)", name, strings.Join(c.names, ", "))
	default:
		return c.lookup(name)
	}
	return nil
}

// root resolves a step id used by step i (in depends_on or as a $ref's
// root). It returns the entry of the referenced step's tool (nil when
// unknown) and whether the id is usable.
func (v *validator) root(i int, id, ptr, what string) (*entry, bool) {
	if t, ok := v.done[id]; ok {
		return v.c.lookup(t), true
	}
	j, ok := v.index[id]
	switch {
	case ok && j == i:
		v.add(ptr, "step %q %s itself", id, what)
	case ok && j > i:
		v.edges[i] = append(v.edges[i], j)
		v.cycles = append(v.cycles, [2]int{i, j})
		v.add(ptr, "%s step %q, which comes later (%s): a step may only use earlier steps, so move %q before this one", what, id, stepPtr(j), id)
	case ok:
		v.edges[i] = append(v.edges[i], j)
		v.info[i].deps = append(v.info[i].deps, j)
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
		v.add(ptr, "%s unknown step %q%s", what, id, didYouMean(id, known))
	}
	return nil, false
}

func (v *validator) ref(i int, r argRef) {
	ptr := stepPtr(i) + "/args" + r.ptr
	target, ok := v.root(i, r.path[0].Key, ptr, "$ref "+strconv.Quote(r.raw)+" uses")
	if !ok || target == nil {
		return
	}
	var nodes []any
	open := false
	switch {
	case target.out == nil && len(r.path) > 1:
		v.add(ptr, "$ref %q: tool %s declares no output schema, so only its whole output can be used ({\"$ref\": %q})", r.raw, target.spec.Name, r.path[0].Key)
		return
	case target.out == nil:
		open = true
	default:
		var msg string
		nodes, open, msg = walkSchema(target.outDoc, r.path[1:], r.path[0].Key)
		if msg != "" {
			v.add(ptr, "$ref %q: %s (output of tool %s)", r.raw, msg, target.spec.Name)
			return
		}
	}
	self := v.info[i].entry
	if self == nil || self.in == nil {
		return
	}
	inNodes, inOpen, inMsg := walkSchema(self.inDoc, r.at, "args")
	if inMsg != "" {
		return // the literal check reports args the schema does not take
	}
	out, in := schemaTypes(nodes, open), schemaTypes(inNodes, inOpen)
	if !compatible(out, in) {
		v.add(ptr, "$ref %q gives %s, but tool %s wants %s here", r.raw, typeNames(out), self.spec.Name, typeNames(in))
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
	if len(info.refs) > 0 {
		args, _, _ = substitute(args, func(string) (any, error) { return nil, nil })
	}
	err := info.entry.in.Validate(args)
	if err == nil {
		return
	}
	se, ok := err.(*schema.Error)
	if !ok {
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
		if n >= len(v.edges) {
			continue
		}
		for _, m := range v.edges[n] {
			if _, seen := prev[m]; !seen {
				prev[m] = n
				queue = append(queue, m)
			}
		}
	}
	return nil
}
