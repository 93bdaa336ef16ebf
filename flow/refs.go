package flow

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/reinhq/rein/flow/ref"
	"github.com/reinhq/rein/flow/template"
)

// use is one reference found in a step's templates or expressions.
type use struct {
	path  ref.Path
	pos   Pos
	where string // "prompt_template", "when", "args/to", …
	// self is true where the step's own output is visible (gate, repeat.until).
	self bool
}

// checkReferences checks every name a template or expression uses: it must
// be an upstream step, a declared input field, or a namespace (input,
// steps.<id>.status) — and a field of a step must be one that step's schema
// declares.
func (d *decoder) checkReferences() {
	f := d.flow
	inputFields := map[string]bool{}
	if f.Inputs != nil {
		if m, ok := f.Inputs.Doc.(map[string]any); ok {
			if props, ok := m["properties"].(map[string]any); ok {
				for k := range props {
					inputFields[k] = true
				}
			}
		}
		for _, s := range f.Steps {
			if inputFields[s.ID] {
				d.diags.add(posOf(d.srcs[s.Index].fields["id"].value), s.ID, "step id %q is also a field of inputs: rename one of them so {%s} is not ambiguous", s.ID, s.ID)
			}
		}
	}
	guessed := map[string]bool{}
	for _, src := range d.srcs {
		s := src.step
		uses := d.uses(src)
		for _, u := range uses {
			d.checkUse(s, u, inputFields, guessed)
		}
		for _, u := range uses {
			if len(u.path) >= 3 && u.path[0].Key == "steps" && u.path[2].Key == "status" && strings.HasPrefix(u.where, "when") {
				if s.WhenStatusOf == nil {
					s.WhenStatusOf = map[string]bool{}
				}
				s.WhenStatusOf[u.path[1].Key] = true
			}
		}
		d.skipSources(s, uses)
	}
	if f.Inputs == nil && len(guessed) > 0 {
		names := make([]string, 0, len(guessed))
		for n := range guessed {
			names = append(names, n)
		}
		sort.Strings(names)
		f.UndeclaredInputs = names
		d.diags.warn(Pos{1, 1}, "", "the flow declares no inputs:, so %s %s taken as %s; declare inputs: to have them checked before a run",
			quoteList(names), plural(len(names), "is", "are"), plural(len(names), "an input field", "input fields"))
	}
}

// skipSources sets s.SkipFrom: a skip propagates along an explicit
// requires and to a step that reads the skipped step's output, never along
// the implicit order of a plain list, and not to a step whose when reads
// the skipped step's status.
func (d *decoder) skipSources(s *Step, uses []use) {
	from := map[int]bool{}
	if !s.ImplicitOrder {
		for _, j := range s.RequireIdx {
			if d.flow.Steps[j].Type != Approval {
				from[j] = true
			}
		}
	}
	for _, u := range uses {
		if up := d.readsOutputOf(s, u); up != nil {
			from[up.Index] = true
		}
	}
	s.SkipFrom = nil
	for _, j := range slices.Sorted(maps.Keys(from)) {
		if !s.WhenStatusOf[d.flow.Steps[j].ID] {
			s.SkipFrom = append(s.SkipFrom, j)
		}
	}
}

// readsOutputOf is the upstream step whose output u reads ({id…} or
// steps.<id>.output…), or nil.
func (d *decoder) readsOutputOf(s *Step, u use) *Step {
	p := u.path
	if len(p) == 0 || p[0].IsIndex {
		return nil
	}
	id := p[0].Key
	if id == "steps" {
		if len(p) < 3 || p[1].IsIndex || p[2].Key != "output" {
			return nil
		}
		id = p[1].Key
	} else if u.self && (id == "output" || id == s.ID) {
		return nil
	} else if (id == "item" || id == "index") && s.ForEach != nil || (id == "previous" || id == "iteration") && s.Repeat != nil {
		return nil
	}
	if !d.isUpstream(s, id) {
		return nil
	}
	return d.flow.StepByID(id)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "{" + n + "}"
	}
	return strings.Join(q, ", ")
}

// uses collects the references of one step with their positions.
func (d *decoder) uses(src *stepSrc) []use {
	s := src.step
	var out []use
	exprUses := func(key string, paths []ref.Path, self bool) {
		f := src.fields[key]
		for _, p := range paths {
			out = append(out, use{path: p, pos: posOf(f.value), where: key, self: self})
		}
	}
	if s.When != nil {
		exprUses("when", s.When.Refs(), false)
	}
	if s.Gate != nil {
		exprUses("gate", s.Gate.Refs(), true)
	}
	if s.Premise != nil {
		exprUses("premise", s.Premise.Check.Refs(), true)
	}
	if s.ForEach != nil && s.ForEach.Items != nil {
		exprUses("for_each", s.ForEach.Items.Refs(), false)
	}
	if s.Repeat != nil && s.Repeat.Until != nil {
		rf := src.fields["repeat"]
		for _, p := range s.Repeat.Until.Refs() {
			out = append(out, use{path: p, pos: posOf(rf.value), where: "repeat.until", self: true})
		}
	}
	if s.Prompt != nil {
		f := src.fields["prompt_template"]
		for _, r := range s.Prompt.Refs() {
			out = append(out, use{path: r.Path, pos: posAt(f.value, r.Offset), where: "prompt_template"})
		}
	}
	tmpl := func(key string, t *template.Template) {
		f, ok := src.fields[key]
		if t == nil || !ok {
			return // absent, or a default ({input.text}) the step did not write
		}
		for _, r := range t.Refs() {
			out = append(out, use{path: r.Path, pos: posAt(f.value, r.Offset), where: key})
		}
	}
	tmpl("message", s.Message)
	if s.RouteSpec != nil {
		tmpl("text", s.RouteSpec.Text)
	}
	if s.PlanSpec != nil {
		tmpl("goal", s.PlanSpec.Goal)
	}
	if s.Args != nil {
		for _, r := range s.Args.Refs() {
			leaf := nodeAt(src.argsNode, r.Pointer)
			out = append(out, use{path: r.Path, pos: posAt(leaf, r.Offset), where: "args" + r.Pointer})
		}
	}
	if fb := s.Fallback; fb != nil {
		f := src.fields["fallback"]
		if fb.Args != nil {
			for _, r := range fb.Args.Refs() {
				out = append(out, use{path: r.Path, pos: posOf(f.value), where: "fallback.args" + r.Pointer})
			}
		}
		if fb.Prompt != nil {
			for _, r := range fb.Prompt.Refs() {
				out = append(out, use{path: r.Path, pos: posOf(f.value), where: "fallback.prompt_template"})
			}
		}
	}
	return out
}

func (d *decoder) checkUse(s *Step, u use, inputFields, guessed map[string]bool) {
	f := d.flow
	root := u.path[0].Key
	if u.path[0].IsIndex {
		return
	}
	rest := u.path[1:]
	fail := func(format string, args ...any) {
		d.diags.add(u.pos, s.ID, "%s: %s", u.where, fmt.Sprintf(format, args...))
	}
	switch {
	case (root == "item" || root == "index") && s.ForEach != nil:
		if w := itemlessField(u.where); w != "" {
			fail("{%s} is not defined in %s: %s (use it in the templates and args of the step and its fallback)", u.path, u.where, w)
		}
		return
	case (root == "previous" || root == "iteration") && s.Repeat != nil:
		return
	case u.self && (root == "output" || root == s.ID):
		if sch := d.outputSchema(s); sch != nil {
			if msg := undeclared(d.outputDoc(s, sch), rest, root); msg != "" {
				fail("%s", msg)
			}
		}
		return
	case root == "item" || root == "index":
		fail("{%s} is defined only in for_each steps (the current item and its position)", u.path)
		return
	case root == "previous" || root == "iteration":
		fail("{%s} is defined only in repeat steps (the previous round's output and the round number)", u.path)
		return
	case root == "output":
		fail("{%s} is the step's own output, visible only in gate and repeat.until", u.path)
		return
	case root == "input":
		if f.Inputs != nil && len(rest) > 0 {
			if msg := undeclared(f.Inputs.Doc, rest, "input"); msg != "" {
				fail("%s", msg)
			}
		} else if f.Inputs == nil && len(rest) > 0 && !rest[0].IsIndex {
			guessed[rest[0].Key] = true
		}
		return
	case root == "steps":
		f.ReadsSteps = true
		d.checkStatusUse(s, u, fail)
		return
	}
	if up := f.StepByID(root); up != nil {
		if !d.isUpstream(s, root) {
			if root == s.ID {
				fail("{%s} is this step itself; its output is visible only in gate and repeat.until (as output)", root)
				return
			}
			fail("{%s} names step %s, which is not upstream of this step: add it to requires (directly or through a step that requires it)", u.path, root)
			return
		}
		d.checkStepFields(up, rest, u.path, fail)
		return
	}
	if f.Inputs != nil {
		if inputFields[root] {
			if msg := undeclared(f.Inputs.Doc, u.path, "input"); msg != "" {
				fail("%s", msg)
			}
			return
		}
		if undeclared(f.Inputs.Doc, ref.Path{{Key: root}}, "input") == "" {
			return // inputs leaves room for it
		}
		fail("{%s} is neither an upstream step nor a field of inputs (upstream: %s; inputs: %s)%s", u.path,
			noneIfEmpty(f.Upstream(s)), noneIfEmpty(sortedKeys(inputFields)), didYouMean(root, append(f.Upstream(s), sortedKeys(inputFields)...)))
		return
	}
	guessed[root] = true
}

// itemlessField says why item and index are not visible in a for_each
// step's field where, or "" when they are.
func itemlessField(where string) string {
	switch where {
	case "when":
		return "when is evaluated once, before the items"
	case "for_each":
		return "for_each gives the items"
	case "gate":
		return "gate is checked once, on the list of the items' outputs"
	case "premise":
		return "premise is checked once, on the list of the items' outputs"
	}
	return ""
}

func (d *decoder) checkStatusUse(s *Step, u use, fail func(string, ...any)) {
	p := u.path
	if len(p) < 2 || p[1].IsIndex {
		fail("steps is a namespace: write steps.<id>.status or steps.<id>.output")
		return
	}
	id := p[1].Key
	up := d.flow.StepByID(id)
	if up == nil {
		fail("steps.%s names no step%s", id, didYouMean(id, d.stepIDs()))
		return
	}
	if !d.isUpstream(s, id) {
		fail("steps.%s: step %s is not upstream of this step: add it to requires", id, id)
		return
	}
	if len(p) < 3 || p[2].IsIndex {
		fail("write steps.%s.status or steps.%s.output", id, id)
		return
	}
	switch p[2].Key {
	case "status":
		if len(p) > 3 {
			fail("steps.%s.status is a string; it has no fields", id)
		}
	case "output":
		d.checkStepFields(up, p[3:], p, fail)
	default:
		fail("steps.%s has status and output, not %q", id, p[2].Key)
	}
}

// checkStepFields checks rest (the path after the step) against the step's
// output schema.
func (d *decoder) checkStepFields(up *Step, rest, full ref.Path, fail func(string, ...any)) {
	if len(rest) == 0 {
		return
	}
	sch := d.outputSchema(up)
	if sch == nil {
		if up.Type == LLM && up.ForEach == nil {
			fail("{%s}: step %s has no output_schema, so its output is text with no fields: give it an output_schema", full, up.ID)
		}
		return
	}
	if msg := undeclared(d.outputDoc(up, sch), rest, up.ID); msg != "" {
		fail("{%s}: %s", full, msg)
	}
}

// outputDoc is the schema of a step's whole output: a list of items for a
// for_each step.
func (d *decoder) outputDoc(s *Step, sch *Schema) any {
	if s.ForEach != nil {
		return map[string]any{"type": "array", "items": sch.Doc}
	}
	return sch.Doc
}

func (d *decoder) stepIDs() []string {
	out := make([]string, 0, len(d.flow.Steps))
	for _, s := range d.flow.Steps {
		out = append(out, s.ID)
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func noneIfEmpty(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
