package plan

import (
	"fmt"
	"strconv"

	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// provenance says where step i's args come from: a {"$ref"} puts the
// output of an earlier step (tool:<name>, or db for a tool whose effect is
// read); every other leaf the model wrote, so it is inferred unless the
// run's evidence (State.Evidence: the user's input, tool outputs so far)
// holds its value (safety.Evidence).
func (r *round) provenance(i int) safety.Provenance {
	s := &r.p.Steps[i]
	refs := r.an.steps[i].refs
	out := safety.Provenance{}
	var walk func(x any, ptr string)
	walk = func(x any, ptr string) {
		for k := range refs {
			if refs[k].ptr == ptr {
				out.Add(ptr, r.refOrigin(refs[k].path[0].Key))
				return
			}
		}
		switch v := x.(type) {
		case map[string]any:
			for k, e := range v {
				walk(e, ptr+"/"+pointerToken(k))
			}
		case []any:
			for k, e := range v {
				walk(e, ptr+"/"+strconv.Itoa(k))
			}
		default:
			r.st.Evidence.AddOrigins(out, ptr, x)
		}
	}
	if s.Args != nil {
		walk(s.Args, "")
	}
	return out
}

// refOrigin is the origin of the output of plan step id (this plan's or a
// completed one's).
func (r *round) refOrigin(id string) safety.Origin {
	name := ""
	for k := range r.p.Steps {
		if r.p.Steps[k].ID == id {
			name = r.p.Steps[k].Tool
			break
		}
	}
	if name == "" {
		for _, res := range r.st.results {
			if res.ID == id {
				name = res.Tool
			}
		}
	}
	spec := tool.Spec{Name: name}
	if t, ok := r.e.tools[name]; ok {
		spec = t.Spec()
	}
	return safety.ToolOrigin(&spec)
}

// signals are what the risk tier is assessed from for the plan's steps
// that will run (not those reused): their tools and how many of the args
// driving side effects the planner wrote.
func (r *round) signals() safety.Signals {
	s := safety.Signals{Ahead: true}
	for i := range r.p.Steps {
		ent := r.an.steps[i].entry
		if r.an.steps[i].reused || ent == nil {
			continue
		}
		s.Tools = append(s.Tools, ent.spec)
		s.CountArgs(&ent.spec, r.provenance(i))
	}
	return s
}

// declarationProblems locates in the plan why the gate asked plan step i
// to verify: its missing declaration, or each fact the run does not
// confirm.
func declarationProblems(i int, s *Step, ve *invoke.VerifyError) []Problem {
	ptr := stepPtr(i) + "/declaration"
	if ve.Missing || s.Declaration == nil {
		return []Problem{{Pointer: ptr, Message: fmt.Sprintf("tool %s has side effects and the step declares nothing: add a declaration {action, facts: [{claim, source, evidence}]} whose facts cite the user's input or a tool output of this run", s.Tool)}}
	}
	if len(s.Declaration.Facts) == 0 {
		return []Problem{{Pointer: ptr + "/facts", Message: "the declaration states no fact: cite what the call relies on, each with its source and evidence"}}
	}
	var out []Problem
	for k, c := range ve.Claims {
		if !c.Supported {
			out = append(out, Problem{Pointer: ptr + "/facts/" + strconv.Itoa(k), Message: fmt.Sprintf("fact %q is unverified: %s", c.Claim, c.Evidence)})
		}
	}
	return out
}
