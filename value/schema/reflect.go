package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/invopop/jsonschema"
)

var reflected sync.Map // reflectKey → *Schema

type reflectKey struct {
	t        reflect.Type
	nullable bool
}

// ReflectOptions adjust Reflect.
type ReflectOptions struct {
	// Nullable lets every value in the schema also be null, as
	// encoding/json writes a nil slice, map or pointer (the schema cannot
	// tell a pointer from its element). It fits schemas of values a Go
	// program produces (a tool's output): their fields are what matters.
	Nullable bool
}

// Reflect derives the JSON Schema of t from its Go type and json tags
// (github.com/invopop/jsonschema: fields without omitempty or omitzero are
// required, unknown properties are rejected, `jsonschema:"…"` tags add
// descriptions and enums). Definitions are inlined, except in a recursive
// type, whose schema refers to its definitions under $defs. It returns nil
// for an interface type such as any, and an error for a type JSON cannot
// hold (channels, functions, complex numbers). Results are cached per type;
// it is safe for concurrent use.
func Reflect(t reflect.Type, opts *ReflectOptions) (*Schema, error) {
	if t.Kind() == reflect.Interface {
		return nil, nil
	}
	key := reflectKey{t: t, nullable: opts != nil && opts.Nullable}
	if s, ok := reflected.Load(key); ok {
		return s.(*Schema), nil
	}
	recursive, err := inspectType(t, map[reflect.Type]bool{})
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", t, err)
	}
	// Inlining a recursive type never ends; it needs references, and the
	// root must stay a reference too or the inner ones would dangle.
	r := &jsonschema.Reflector{DoNotReference: !recursive, ExpandedStruct: !recursive, Anonymous: true}
	doc := r.ReflectFromType(t)
	doc.Version = ""
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", t, err)
	}
	if key.nullable {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("schema of %s: %w", t, err)
		}
		if raw, err = json.Marshal(nullable(v)); err != nil {
			return nil, fmt.Errorf("schema of %s: %w", t, err)
		}
	}
	s, err := Compile(t.String(), json.RawMessage(raw))
	if err != nil {
		return nil, err
	}
	reflected.Store(key, s)
	return s, nil
}

// nullable widens every "type" in the schema doc (and its subschemas) to
// also allow null.
func nullable(doc any) any {
	d, ok := doc.(map[string]any)
	if !ok {
		return doc
	}
	if t, ok := d["type"].(string); ok && t != "null" {
		d["type"] = []any{t, "null"}
	}
	for k, v := range d {
		switch k {
		case "properties", "patternProperties", "$defs", "definitions":
			if m, ok := v.(map[string]any); ok {
				for name, sub := range m {
					m[name] = nullable(sub)
				}
			}
		case "items", "additionalProperties", "not", "contains":
			d[k] = nullable(v)
		case "prefixItems", "anyOf", "oneOf", "allOf":
			if l, ok := v.([]any); ok {
				for i, sub := range l {
					l[i] = nullable(sub)
				}
			}
		}
	}
	return doc
}

// inspectType reports whether t refers to itself through its fields,
// elements or pointers, and rejects kinds JSON cannot hold. path holds the
// struct types being inspected.
func inspectType(t reflect.Type, path map[reflect.Type]bool) (recursive bool, err error) {
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		return false, fmt.Errorf("a %s cannot be written as JSON", t.Kind())
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return inspectType(t.Elem(), path)
	case reflect.Map:
		return inspectType(t.Elem(), path)
	case reflect.Struct:
		if path[t] {
			return true, nil
		}
		path[t] = true
		defer delete(path, t)
		for f := range t.Fields() {
			if !f.IsExported() && !f.Anonymous || f.Tag.Get("json") == "-" {
				continue
			}
			rec, err := inspectType(f.Type, path)
			if err != nil {
				return false, fmt.Errorf("field %s: %w", f.Name, err)
			}
			recursive = recursive || rec
		}
	}
	return recursive, nil
}
