package value

import (
	"encoding/json"
	"fmt"
	"math"
)

// Normalize returns v in the JSON domain (nil, bool, float64, string, []any,
// map[string]any). Values already in the domain are returned as they are,
// without copying; ints become float64; anything else (structs, typed maps
// and slices) goes through encoding/json once. Non-finite floats and values
// encoding/json cannot encode are errors.
func Normalize(v any) (any, error) {
	if ok, err := inDomain(v); err != nil {
		return nil, err
	} else if ok {
		return v, nil
	}
	switch x := v.(type) {
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case float32:
		return float64(x), nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("value of type %T is not JSON: %w", v, err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("value of type %T is not JSON: %w", v, err)
	}
	return out, nil
}

// inDomain reports whether v is entirely made of JSON-domain shapes.
func inDomain(v any) (bool, error) {
	switch x := v.(type) {
	case nil, bool, string:
		return true, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false, fmt.Errorf("value %v is not a finite number", x)
		}
		return true, nil
	case []any:
		for _, e := range x {
			if ok, err := inDomain(e); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	case map[string]any:
		for _, e := range x {
			if ok, err := inDomain(e); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	}
	return false, nil
}
