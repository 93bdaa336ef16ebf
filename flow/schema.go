package flow

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/value/schema"
)

// Schema is a compiled JSON Schema; see package value/schema.
type Schema = schema.Schema

// SchemaError lists the ways a value breaks a schema, each with its JSON
// pointer.
type SchemaError = schema.Error

// Violation is one way a value breaks a schema.
type Violation = schema.Violation

// CompileSchema compiles doc (JSON values, or json.RawMessage) under name.
func CompileSchema(name string, doc any) (*Schema, error) { return schema.Compile(name, doc) }

// schemaSet resolves schema names for one flow: the flow's schemas: first,
// then schemas/<name>.json beside the flow, then <name>.json beside it.
type schemaSet struct {
	dir    string
	byName map[string]*Schema
	// files caches schemas loaded from disk by absolute path.
	files map[string]*Schema
	// read reads a schema file (decoder.readFile).
	read func(path string) ([]byte, error)
}

// lookupFile loads a schema file relative to the flow's folder.
func (ss *schemaSet) lookupFile(rel, name string) (*Schema, error) {
	path := rel
	if !filepath.IsAbs(path) {
		path = filepath.Join(ss.dir, rel)
	}
	if s, ok := ss.files[path]; ok {
		return s, nil
	}
	data, err := ss.read(path)
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSchemaFileBytes {
		return nil, fmt.Errorf("schema file %s is %d bytes, more than the %d a schema file may have", rel, len(data), MaxSchemaFileBytes)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(yamlnode.TrimBOM(data)))
	if err != nil {
		return nil, fmt.Errorf("schema file %s is not JSON: %w", rel, err)
	}
	s, err := CompileSchema(name, doc)
	if err != nil {
		return nil, err
	}
	ss.files[path] = s
	return s, nil
}

// resolve finds the schema called name, trying the places in order.
func (ss *schemaSet) resolve(name string) (*Schema, error) {
	if s, ok := ss.byName[name]; ok {
		return s, nil
	}
	tried := []string{}
	candidates := []string{filepath.Join("schemas", name+".json"), name + ".json"}
	if strings.HasSuffix(name, ".json") {
		candidates = []string{name}
	}
	for _, c := range candidates {
		s, err := ss.lookupFile(c, name)
		if err == nil {
			ss.byName[name] = s
			return s, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		tried = append(tried, c)
	}
	names := make([]string, 0, len(ss.byName))
	for n := range ss.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	known := "the flow defines no schemas:"
	if len(names) > 0 {
		known = "schemas: defines " + strings.Join(names, ", ")
	}
	return nil, fmt.Errorf("schema %q not found: %s, and there is no %s beside the flow%s", name, known, strings.Join(tried, " or "), didYouMean(name, names))
}
