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
// (github.com/invopop/jsonschema: fields without omitempty are required,
// unknown properties are rejected, `jsonschema:"…"` tags add
// descriptions and enums). It returns nil for T = any. Results are cached
// per type.
func SchemaFor[T any]() (*schema.Schema, error) {
	t := reflect.TypeFor[T]()
	if t.Kind() == reflect.Interface {
		return nil, nil
	}
	if s, ok := schemaCache.Load(t); ok {
		return s.(*schema.Schema), nil
	}
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true}
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
