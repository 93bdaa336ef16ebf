package engine

import (
	"fmt"
	"strings"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/flow/ref"
	"github.com/reinhq/rein/value"
)

// CheckInput normalises a run input and checks it against the flow's
// inputs schema, or — when the flow declares none — that it has every field
// the flow's templates and expressions read. Run does this itself; callers
// use it to reject a bad input before they set anything up. The error is an
// *InputError.
func CheckInput(f *flow.Flow, input any) (any, error) {
	if input == nil {
		input = map[string]any{}
	}
	in, err := value.Normalize(input)
	if err != nil {
		return nil, &InputError{Flow: f.Name, Problem: err.Error()}
	}
	if f.Inputs != nil {
		if err := f.Inputs.Validate(in); err != nil {
			return nil, &InputError{Flow: f.Name, Problem: err.Error()}
		}
		return in, nil
	}
	if len(f.UndeclaredInputs) == 0 {
		return in, nil
	}
	m, ok := in.(map[string]any)
	if !ok {
		return nil, &InputError{Flow: f.Name, Problem: fmt.Sprintf("the flow reads input fields %s, so the input must be a JSON object, not %s",
			strings.Join(f.UndeclaredInputs, ", "), ref.TypeName(in))}
	}
	var missing []string
	for _, name := range f.UndeclaredInputs {
		if _, ok := m[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, &InputError{Flow: f.Name, Missing: missing, Problem: fmt.Sprintf("missing field %s (the flow's templates read %s)",
			strings.Join(missing, ", "), strings.Join(f.UndeclaredInputs, ", "))}
	}
	return in, nil
}
