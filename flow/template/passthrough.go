package template

import "github.com/reinhq/rein/flow/ref"

// Passthrough reports whether the whole args tree is one placeholder (for
// example `args: "{extract}"`), returning its path: rendering then hands the
// referenced value on unchanged, so callers may reuse what they know about
// that value (its digest) instead of recomputing it.
func (v *Value) Passthrough() (ref.Path, bool) {
	if v == nil || v.root.kind != kindTemplate || !v.root.tmpl.Single() {
		return nil, false
	}
	return v.root.tmpl.parts[0].ref.Path, true
}
