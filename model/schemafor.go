package model

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/invopop/jsonschema"

	"github.com/reinhq/rein/value/schema"
)

var schemaCache sync.Map // reflect.Type → *schema.Schema

// SchemaFor derives the JSON Schema of T from its Go type and json tags
// (github.com/invopop/jsonschema: fields without omitempty or omitzero are
// required, unknown properties are rejected, `jsonschema:"…"` tags add
// descriptions and enums). Definitions are inlined, except in a recursive
// type, whose schema refers to its definitions under $defs. It returns nil
// for an interface type such as any, and an error for a type JSON cannot
// hold (channels, functions, complex numbers). Results are cached per type;
// it is safe for concurrent use.
func SchemaFor[T any]() (*schema.Schema, error) {
	t := reflect.TypeFor[T]()
	if t.Kind() == reflect.Interface {
		return nil, nil
	}
	if s, ok := schemaCache.Load(t); ok {
		return s.(*schema.Schema), nil
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
	s, err := schema.Compile(t.String(), json.RawMessage(raw))
	if err != nil {
		return nil, err
	}
	schemaCache.Store(t, s)
	return s, nil
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
