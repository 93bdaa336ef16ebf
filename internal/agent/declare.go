package agent

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// DeclarationArg is the argument a side-effecting tool gains in the schema
// the model sees: the call's declaration (safety.Declaration). The loop
// takes it out of the arguments before anything else sees them: the tool
// is never passed it, the journal keeps it on the call.
const DeclarationArg = "declaration"

// sideEffect reports whether spec's tool writes, acts outside or destroys.
func sideEffect(spec *tool.Spec) bool {
	switch spec.Effect {
	case tool.EffectWrite, tool.EffectExternal, tool.EffectDestructive:
		return true
	}
	return false
}

// withDeclaration returns the input schema raw with the optional
// declaration property added, and false when raw already has a property
// of that name (the tool's own; its calls then carry no declaration) or
// is not a JSON object.
func withDeclaration(raw json.RawMessage) (json.RawMessage, bool) {
	doc := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &doc); err != nil {
			return raw, false
		}
	}
	props, _ := doc["properties"].(map[string]any)
	if props == nil {
		if _, has := doc["properties"]; has {
			return raw, false
		}
		props = map[string]any{}
		if _, typed := doc["type"]; !typed {
			doc["type"] = "object"
		}
	}
	if _, taken := props[DeclarationArg]; taken {
		return raw, false
	}
	var decl any
	if err := json.Unmarshal([]byte(safety.DeclarationSchema), &decl); err != nil {
		return raw, false
	}
	props[DeclarationArg] = decl
	doc["properties"] = props
	out, err := json.Marshal(doc)
	if err != nil {
		return raw, false
	}
	return out, true
}

// takeDeclaration removes the declaration from args (of a tool that
// declares) and parses it. Problems are located under /declaration.
func takeDeclaration(args map[string]any) (*safety.Declaration, []safety.Problem) {
	raw, ok := args[DeclarationArg]
	if !ok {
		return nil, nil
	}
	delete(args, DeclarationArg)
	if raw == nil {
		return nil, nil
	}
	d, ps := safety.ParseDeclaration(raw)
	for i := range ps {
		ps[i].Pointer = "/" + DeclarationArg + ps[i].Pointer
	}
	return d, ps
}

// evidence is what the calls of turn n may be traced to: the user's
// messages (history and task: free text, so a value found there is
// user-mentioned), the run's own record (Config.Evidence: a flow's
// structured input), and the observations of the calls that succeeded
// before turn n — what the model had seen when it wrote them, whose
// verifies: fields may confirm a value.
func (l *Loop) evidence(s *Session, n int) *safety.Evidence {
	ev := &safety.Evidence{}
	for i, m := range s.History {
		if m.Role == model.User {
			ev.AddUserText(fmt.Sprintf("history/%d", i), m.Content)
		}
	}
	ev.AddUserText("task", s.Task)
	ev.Include(l.cfg.Evidence)
	for i := range s.Turns {
		t := &s.Turns[i]
		if t.N >= n {
			break
		}
		for k := range t.Calls {
			c := &t.Calls[k]
			if c.Status != StatusOK {
				continue
			}
			spec := tool.Spec{Name: c.Tool, Effect: tool.EffectExternal} // a tool no longer offered verifies nothing
			if bt := l.tools[c.Tool]; bt != nil {
				spec = bt.spec
			}
			ev.AddObservation(Ref(t.N, c.Index), &spec, c.Observation)
		}
	}
	return ev
}

// gated reports whether the loop's pipeline has a gate to tell.
func (l *Loop) gated() bool {
	g := l.cfg.Pipeline.Gate
	return g != nil && g != safety.AllowAll
}

// traces reports whether the loop traces calls of bt: a side-effecting
// tool's, and every tool's when the pipeline has a gate. execute_plan's
// plan steps are traced one by one by the executor.
func (l *Loop) traces(bt *boundTool) bool {
	return bt != l.plannerTool() && (l.gated() || sideEffect(&bt.spec))
}

// tracesAny reports whether a call of t among jobs is traced, or runs a
// plan under a gate.
func (l *Loop) tracesAny(t *Turn, jobs []int) bool {
	if l.gated() {
		return true
	}
	for _, i := range jobs {
		if bt := l.tools[t.Calls[i].Tool]; bt != nil && l.traces(bt) {
			return true
		}
	}
	return false
}

// trace fills in c's provenance, verifications and checked declaration
// from ev, and puts them on req for the gate.
func (l *Loop) trace(ev *safety.Evidence, bt *boundTool, c *Call, args map[string]any, req *invoke.Request) {
	c.Provenance = ev.Trace(args)
	c.Verified = ev.Verify(args, c.Provenance)
	c.Claims = safety.CheckDeclaration(c.Declaration, ev)
	req.Provenance, req.Verified, req.Declaration, req.Claims = c.Provenance, c.Verified, c.Declaration, c.Claims
	// a tool whose own schema takes "declaration" cannot be asked for one
	req.Chosen = bt.declares || !sideEffect(&bt.spec)
}

// verifyObservation tells the model, for a call the gate sent back for
// verification, what to verify and with which tools, as JSON.
func (l *Loop) verifyObservation(c *Call, ve *invoke.VerifyError) string {
	type unsupported struct {
		Claim string `json:"claim"`
		Why   string `json:"why"`
	}
	obs := struct {
		Error       string        `json:"error"`
		Tool        string        `json:"tool"`
		Rule        string        `json:"rule"`
		Problem     string        `json:"problem"`
		Unsupported []unsupported `json:"unsupported,omitempty"`
		VerifyWith  []string      `json:"verify_with"`
		Next        string        `json:"next"`
	}{Error: "verify_first", Tool: c.Tool, Rule: ve.Rule, VerifyWith: l.readTools()}
	if ve.Missing {
		obs.Problem = fmt.Sprintf("%s has side effects and the call carries no %s", c.Tool, DeclarationArg)
	} else {
		obs.Problem = "the declaration states facts this run does not confirm"
		for _, v := range ve.Claims {
			if !v.Supported {
				obs.Unsupported = append(obs.Unsupported, unsupported{Claim: v.Claim, Why: v.Evidence})
			}
		}
		if len(obs.Unsupported) == 0 {
			obs.Problem = "the declaration states no fact"
		}
	}
	with := "one of verify_with"
	if len(obs.VerifyWith) == 0 {
		with = "the user (ask in your answer)"
	}
	obs.Next = fmt.Sprintf("nothing ran. Confirm the facts the call relies on with %s, then call %s again with %s: {action, facts: [{claim, source: user | db | tool:<name>, evidence: the user's exact words, or the exact value of a field that tool verifies}]}", with, c.Tool, DeclarationArg)
	b, _ := json.Marshal(obs)
	return string(b)
}

// readTools names the loop's tools that only read or compute and are a
// source of truth for some field of their output (verifies:): the only
// tools whose output can confirm a fact.
func (l *Loop) readTools() []string {
	var out []string
	for name, bt := range l.tools {
		if bt != l.plannerTool() && !sideEffect(&bt.spec) && len(bt.spec.Verifies) > 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// describeProblems joins declaration problems for an observation.
func describeProblems(ps []safety.Problem) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}
