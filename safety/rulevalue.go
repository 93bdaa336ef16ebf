package safety

import (
	"context"
	"slices"
	"strings"
)

// Condition is a rule's when: a test over the invocation's values (its
// args, tool and tier) that the rule's other conditions cannot express,
// such as "refunds above 100". Holds must be deterministic, stop when ctx
// ends, and be safe for concurrent use. rein.yaml's when: is an
// expression (package flow compiles it).
type Condition interface {
	Holds(ctx context.Context, inv *Invocation) (bool, error)
	// String is the condition as written, for reasons and traces.
	String() string
}

// ArgOrigins is a per-argument provenance condition: the argument at
// Pointer (or a value inside it) comes from one of Origins. A rule with
// Arguments holds only when every one of them does.
type ArgOrigins struct {
	// Pointer is a JSON pointer into the args ("" is the whole args).
	Pointer string
	Origins []Origin
}

// argsHold reports whether every per-argument condition of r holds for
// inv, and the first pointer that matched.
func (r *Rule) argsHold(inv *Invocation) (string, bool) {
	var first string
	for i, a := range r.Arguments {
		ptr, ok := r.argHolds(inv, &a)
		if !ok {
			return "", false
		}
		if i == 0 {
			first = ptr
		}
	}
	return first, true
}

func (r *Rule) argHolds(inv *Invocation, a *ArgOrigins) (string, bool) {
	ptr, _, ok := inv.Provenance.Find(func(p string, o Origin) bool {
		if !under(p, a.Pointer) || !originIn(a.Origins, o) {
			return false
		}
		return !r.Unverified || !isVerified(inv.Verified, p)
	})
	return ptr, ok
}

// under reports whether pointer p is ptr or inside it.
func under(p, ptr string) bool {
	return ptr == "" || p == ptr || strings.HasPrefix(p, ptr+"/")
}

func originIn(want []Origin, o Origin) bool {
	return slices.ContainsFunc(want, func(w Origin) bool { return w == o || w == "tool:*" && o.IsTool() })
}

// whenHolds evaluates r.When. An error fails closed: a rule that
// restricts holds (its reason says the condition could not be decided), an
// allow rule does not.
func (r *Rule) whenHolds(ctx context.Context, inv *Invocation) (held bool, failed error) {
	if r.When == nil {
		return true, nil
	}
	ok, err := r.When.Holds(ctx, inv)
	if err != nil {
		return r.Verdict != Allow, err
	}
	return ok, nil
}
