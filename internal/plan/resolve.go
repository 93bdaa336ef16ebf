package plan

import (
	"fmt"

	"github.com/reinhq/rein/flow/ref"
)

// ResolveArgs returns the args of plan step s with every $ref replaced by
// the value it names in the outputs of completed (a resumed plan's
// Progress.Completed): the args its call was made with. A reference that
// does not resolve is an error naming it.
func ResolveArgs(s *Step, completed []StepResult) (any, error) {
	outputs := make(map[string]any, len(completed))
	for _, c := range completed {
		outputs[c.ID] = c.Output
	}
	var args any = s.Args
	if s.Args == nil {
		args = map[string]any{}
	}
	out, _, err := substitute(args, func(raw string) (any, error) {
		p, err := ref.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("$ref %q: %w", raw, err)
		}
		v, err := ref.Resolve(outputs, p)
		if err != nil {
			return nil, fmt.Errorf("$ref %q: %w", raw, err)
		}
		return v, nil
	})
	return out, err
}
