package flow

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/reinhq/rein/flow/expression"
	"github.com/reinhq/rein/safety"
)

// whenRoots are the names a rule's when: may read: the call's args (as
// JSON values), the tool's name and the run's risk tier (0 when none was
// assessed).
var whenRoots = []string{"args", "tool", "tier"}

// whenCondition is a rule's when: expression as a safety.Condition.
type whenCondition struct{ prog *expression.Program }

var _ safety.Condition = whenCondition{}

func (c whenCondition) String() string { return c.prog.Source() }

// Holds evaluates the expression over the invocation, within ctx (a step
// timeout or a signal stops a heavy expression as it stops a when:).
func (c whenCondition) Holds(ctx context.Context, inv *safety.Invocation) (bool, error) {
	args, err := jsonValue(inv.Args)
	if err != nil {
		return false, err
	}
	return c.prog.EvalContext(ctx, map[string]any{"args": args, "tool": inv.Tool.Name, "tier": inv.Tier})
}

// jsonValue is v as the expression language sees JSON: raw JSON is
// decoded, other values pass as they are.
func jsonValue(v any) (any, error) {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		return v, nil
	}
	if len(raw) == 0 {
		return nil, nil
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("the call's args are not JSON: %w", err)
	}
	return out, nil
}

// decodeWhen compiles a rule's when: and checks it reads only whenRoots.
func (d *decoder) decodeWhen(f field, where string) safety.Condition {
	prog := d.expr(field{key: where + ": when", keyPos: f.keyPos, value: f.value}, "")
	if prog == nil {
		return nil
	}
	for _, site := range prog.RefSites() {
		if root := site.Path[0].Key; !slices.Contains(whenRoots, root) {
			d.diags.add(posAt(f.value, site.Offset), "", "%s: when: reads %q; a rule's condition reads only %s (e.g. args.amount > 100)",
				where, root, strings.Join(whenRoots, ", "))
			return nil
		}
	}
	return whenCondition{prog: prog}
}

// decodeArgOrigins reads provenance: as a mapping from JSON pointers to
// origins ({/to: [inferred, user-mentioned]}): per-argument conditions.
func (d *decoder) decodeArgOrigins(f field, where string) ([]safety.ArgOrigins, bool) {
	fields, ok := fieldsOf(f.value)
	if !ok {
		return nil, false
	}
	good := true
	var out []safety.ArgOrigins
	for _, pf := range fields {
		if pf.key != "" && !strings.HasPrefix(pf.key, "/") {
			d.diags.add(pf.keyPos, "", "%s: provenance: %q must be a JSON pointer like /to (or a list of origins for any argument)", where, pf.key)
			good = false
			continue
		}
		list, pos := d.originList(pf, where)
		a := safety.ArgOrigins{Pointer: pf.key}
		for j, e := range list {
			if o := safety.Origin(e); !o.Valid() && e != "tool:*" {
				d.diags.add(pos[j], "", "%s: provenance %s: origin must be user, user-mentioned, constant, inferred, invalidated, db, tool:<name> or tool:*, not %q", where, pf.key, e)
				good = false
			}
			a.Origins = append(a.Origins, safety.Origin(e))
		}
		if len(a.Origins) == 0 {
			d.diags.add(posOf(pf.value), "", "%s: provenance %s: list the origins the argument must come from for the rule to hold", where, pf.key)
			good = false
		}
		out = append(out, a)
	}
	return out, good
}
