package openai

import (
	"encoding/json"
	"fmt"
	"strings"
)

// wrapKey is the property a schema whose root is not an object is wrapped
// in: structured outputs want an object at the root.
const wrapKey = "value"

// shape is how a request's schema was sent, so the answer can be mapped
// back to what the schema asked for.
type shape struct {
	// orig is the schema as given (wrapped when wrapped is set).
	orig object
	// strict is set when the schema was made strict-compatible, so a null
	// may stand for an optional property the model meant to leave out.
	strict bool
	// wrapped is set when a non-object root was wrapped in {"value": …}.
	wrapped bool
}

// prepareSchema decodes raw and returns the schema to send and how it was
// sent. ok is false when raw is not a schema object (true, {}): there is
// then nothing to send.
func prepareSchema(raw json.RawMessage, wantStrict bool) (send object, sh shape, ok bool, err error) {
	v, err := decodeOrdered(raw)
	if err != nil {
		return nil, shape{}, false, fmt.Errorf("request schema is not JSON: %w", err)
	}
	root, isObj := v.(object)
	if !isObj || len(root) == 0 {
		return nil, shape{}, false, nil
	}
	if t, _ := root.get("type"); t != "object" {
		root = wrap(root)
		sh.wrapped = true
	}
	sh.orig = root
	if !wantStrict {
		return root, sh, true, nil
	}
	// Decode again for a copy to rewrite; orig stays as given.
	cp, _ := decodeOrdered(raw)
	work := cp.(object)
	if sh.wrapped {
		work = wrap(work)
	}
	if work, ok := strictify(work); ok {
		sh.strict = true
		return work, sh, true, nil
	}
	return root, sh, true, nil
}

// wrap puts s under the wrap key of an object schema, moving its
// definitions to the new root so that "#/$defs/…" references still hold.
func wrap(s object) object {
	out := object{{"type", "object"}}
	for _, k := range []string{"$defs", "definitions"} {
		if d, ok := s.get(k); ok {
			s.del(k)
			out = append(out, member{k, d})
		}
	}
	return append(out,
		member{"properties", object{{wrapKey, s}}},
		member{"required", []any{wrapKey}},
		member{"additionalProperties", false})
}

// strictify returns s rewritten for OpenAI strict structured outputs:
// every object lists all its properties as required and forbids additional
// ones, properties that were optional become nullable, and oneOf becomes
// anyOf. It reports false when s uses what strict mode cannot express
// (free-form maps, patternProperties, allOf, boolean subschemas); the
// caller then sends the schema as given, not strict. s's members may be
// changed in place.
func strictify(s object) (object, bool) {
	if _, ok := s.get("patternProperties"); ok {
		return s, false
	}
	if _, ok := s.get("allOf"); ok {
		return s, false
	}
	if isObjectSchema(s) {
		if ap, ok := s.get("additionalProperties"); ok && ap != false {
			return s, false
		}
		props := s.obj("properties")
		required := stringSet(s)
		all := make([]any, 0, len(props))
		for i, p := range props {
			ps, ok := p.val.(object)
			if !ok {
				return s, false
			}
			if ps, ok = strictify(ps); !ok {
				return s, false
			}
			if !required[p.key] {
				ps = nullable(ps)
			}
			props[i].val = ps
			all = append(all, p.key)
		}
		if props == nil {
			s.set("properties", object{})
		}
		s.set("required", all)
		s.set("additionalProperties", false)
	}
	if one, ok := s.get("oneOf"); ok {
		s.del("oneOf")
		s.set("anyOf", one)
	}
	for _, k := range []string{"items", "not"} {
		if v, ok := s.get(k); ok {
			sub, isObj := v.(object)
			if !isObj {
				return s, false
			}
			if sub, isObj = strictify(sub); !isObj {
				return s, false
			}
			s.set(k, sub)
		}
	}
	if v, ok := s.get("anyOf"); ok {
		branches, _ := v.([]any)
		for i, b := range branches {
			sub, isObj := b.(object)
			if !isObj {
				return s, false
			}
			if branches[i], isObj = strictify(sub); !isObj {
				return s, false
			}
		}
	}
	for _, k := range []string{"$defs", "definitions"} {
		defs := s.obj(k)
		for i, d := range defs {
			sub, isObj := d.val.(object)
			if !isObj {
				return s, false
			}
			if defs[i].val, isObj = strictify(sub); !isObj {
				return s, false
			}
		}
	}
	return s, true
}

// nullable returns s made to admit null as well: null joins its type
// (and its enum), or an anyOf offers null beside it.
func nullable(s object) object {
	if admitsNull(s, nil) {
		return s
	}
	if _, ok := s.get("const"); ok {
		return orNull(s)
	}
	t, hasType := s.get("type")
	switch tt := t.(type) {
	case string:
		s.set("type", []any{tt, "null"})
	case []any:
		s.set("type", append(tt, "null"))
	}
	if e, ok := s.get("enum"); ok {
		list, _ := e.([]any)
		s.set("enum", append(list, nil))
		return s
	}
	if hasType {
		return s
	}
	if e, ok := s.get("anyOf"); ok {
		list, _ := e.([]any)
		s.set("anyOf", append(list, object{{"type", "null"}}))
		return s
	}
	return orNull(s)
}

func orNull(s object) object {
	return object{{"anyOf", []any{s, object{{"type", "null"}}}}}
}

func isObjectSchema(s object) bool {
	switch t, _ := s.get("type"); tt := t.(type) {
	case string:
		return tt == "object"
	case []any:
		for _, x := range tt {
			if x == "object" {
				return true
			}
		}
		return false
	}
	_, ok := s.get("properties")
	return ok
}

func stringSet(s object) map[string]bool {
	v, _ := s.get("required")
	list, _ := v.([]any)
	set := make(map[string]bool, len(list))
	for _, x := range list {
		if k, ok := x.(string); ok {
			set[k] = true
		}
	}
	return set
}

// admitsNull reports whether s accepts null; root resolves local $refs
// (nil: references are not followed and count as not admitting null).
func admitsNull(s, root object) bool { return admitsNullDepth(s, root, 0) }

// maxDepth bounds how deep the schema walks go, reference cycles included.
const maxDepth = 64

func admitsNullDepth(s, root object, depth int) bool {
	if depth > maxDepth {
		return false
	}
	constrained := false
	if t, ok := s.get("type"); ok {
		switch tt := t.(type) {
		case string:
			if tt == "null" {
				return true
			}
		case []any:
			for _, x := range tt {
				if x == "null" {
					return true
				}
			}
		}
		return false
	}
	if e, ok := s.get("enum"); ok {
		list, _ := e.([]any)
		for _, x := range list {
			if x == nil {
				return true
			}
		}
		return false
	}
	if c, ok := s.get("const"); ok {
		return c == nil
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if v, ok := s.get(k); ok {
			constrained = true
			list, _ := v.([]any)
			for _, b := range list {
				if sub, isObj := b.(object); isObj && admitsNullDepth(sub, root, depth+1) {
					return true
				}
			}
		}
	}
	if ref, ok := s.get("$ref"); ok {
		target := resolve(ref, root)
		return target != nil && admitsNullDepth(target, root, depth+1)
	}
	if _, ok := s.get("allOf"); ok {
		return false
	}
	return !constrained
}

// resolve follows a local reference "#/$defs/name" or "#/definitions/name".
func resolve(ref any, root object) object {
	r, _ := ref.(string)
	for _, k := range []string{"$defs", "definitions"} {
		if name, ok := strings.CutPrefix(r, "#/"+k+"/"); ok {
			return root.obj(k).obj(name)
		}
	}
	return nil
}

// restoreAnswer maps a reply to a strict or wrapped schema back to the
// schema as given: it drops the nulls that stand for optional properties
// left out and unwraps a wrapped root. Text that is not JSON, or does not
// have the expected shape, is returned as is: the engine's validation
// reports it.
func restoreAnswer(text string, sh shape) string {
	if !sh.wrapped && (!sh.strict || !strings.Contains(text, "null")) {
		return text // no null, nothing to drop
	}
	v, err := decodeOrdered([]byte(text))
	if err != nil {
		return text
	}
	if sh.strict {
		v = restore(v, sh.orig, sh.orig, 0)
	}
	if sh.wrapped {
		o, ok := v.(object)
		inner, has := o.get(wrapKey)
		if !ok || !has || len(o) != 1 {
			return text
		}
		v = inner
	}
	out, err := json.Marshal(v)
	if err != nil {
		return text
	}
	return string(out)
}

func restore(v any, s, root object, depth int) any {
	if depth > maxDepth {
		return v
	}
	if ref, ok := s.get("$ref"); ok {
		if target := resolve(ref, root); target != nil {
			s = target
		}
	}
	switch vv := v.(type) {
	case object:
		if branch := onlyBranch(s, root, isObjectSchema); branch != nil {
			return restore(v, branch, root, depth+1)
		}
		props := s.obj("properties")
		if props == nil {
			return v
		}
		required := stringSet(s)
		out := make(object, 0, len(vv))
		for _, m := range vv {
			ps, known := props.obj(m.key), props.obj(m.key) != nil
			if m.val == nil && known && !required[m.key] && !admitsNull(ps, root) {
				continue
			}
			if known {
				m.val = restore(m.val, ps, root, depth+1)
			}
			out = append(out, m)
		}
		return out
	case []any:
		if branch := onlyBranch(s, root, isArraySchema); branch != nil {
			return restore(v, branch, root, depth+1)
		}
		items := s.obj("items")
		if items == nil {
			return v
		}
		for i := range vv {
			vv[i] = restore(vv[i], items, root, depth+1)
		}
		return vv
	}
	return v
}

// onlyBranch returns the one anyOf/oneOf branch of s that is kind, or nil
// when there is none or more than one.
func onlyBranch(s, root object, kind func(object) bool) object {
	var found object
	for _, k := range []string{"anyOf", "oneOf"} {
		v, _ := s.get(k)
		list, _ := v.([]any)
		for _, b := range list {
			sub, ok := b.(object)
			if !ok {
				continue
			}
			if ref, has := sub.get("$ref"); has {
				if target := resolve(ref, root); target != nil {
					sub = target
				}
			}
			if kind(sub) {
				if found != nil {
					return nil
				}
				found = sub
			}
		}
	}
	return found
}

func isArraySchema(s object) bool {
	switch t, _ := s.get("type"); tt := t.(type) {
	case string:
		return tt == "array"
	case []any:
		for _, x := range tt {
			if x == "array" {
				return true
			}
		}
	}
	_, ok := s.get("items")
	return ok
}
