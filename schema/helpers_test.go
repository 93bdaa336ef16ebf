package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compile compiles a schema document (JSON bytes) under name; compiling
// also checks it against the draft 2020-12 meta-schema.
func compile(t *testing.T, name string, doc []byte) *jsonschema.Schema {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("%s is not JSON: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "mem:///" + name
	if err := c.AddResource(url, v); err != nil {
		t.Fatalf("add %s: %v", name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	return sch
}

// yamlValue converts YAML text to JSON values (nil, bool, numbers, string,
// []any, map[string]any) that jsonschema validates.
func yamlValue(data []byte) (any, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return normalise(v)
}

// normalise turns the maps and slices goccy/go-yaml produces into
// map[string]any and []any all the way down.
func normalise(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := normalise(e)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				ks = fmt.Sprint(k)
			}
			n, err := normalise(e)
			if err != nil {
				return nil, err
			}
			out[ks] = n
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normalise(e)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case nil, bool, string, float64, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64, json.Number:
		return x, nil
	}
	return nil, fmt.Errorf("YAML value %v (%T) has no JSON form", v, v)
}

// validateFile validates the YAML file at path against sch.
func validateFile(t *testing.T, sch *jsonschema.Schema, path string) error {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := yamlValue(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return sch.Validate(v)
}
