package model

import (
	"reflect"

	"github.com/reinhq/rein/value/schema"
)

// SchemaFor derives the JSON Schema of T from its Go type and json tags
// (schema.Reflect: fields without omitempty or omitzero are required,
// unknown properties are rejected, `jsonschema:"…"` tags add descriptions
// and enums). It returns nil for an interface type such as any, and an
// error for a type JSON cannot hold. Results are cached per type; it is
// safe for concurrent use.
func SchemaFor[T any]() (*schema.Schema, error) {
	return schema.Reflect(reflect.TypeFor[T](), nil)
}
