package rein

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/reinhq/rein/model/provider"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// modelsOpen checks, before the run id resumes with p, that every model
// its unfinished steps may still call opens: their API keys are set (the
// models open lazily, so a run that cannot call its model would otherwise
// fail at its first model call, after what ran before it). steps are the
// run's step rows, or nil to read them (only when a model does not open).
// A missing key is a business *Error with HintNeedsAPIKey naming the
// variables; any other model that does not open (a rein.yaml entry that
// is wrong) is a format *Error with HintFlowDoesNotLoad. Nothing of the
// run is changed either way.
func (r *Runs) modelsOpen(ctx context.Context, p *Project, id string, steps []*store.Step) error {
	failed := p.unopened()
	if len(failed) == 0 {
		return nil
	}
	if steps == nil {
		var err error
		if steps, err = r.st.Steps(ctx, id); err != nil {
			return fmt.Errorf("steps of run %s: %w", id, err)
		}
	}
	done := map[string]bool{}
	for _, s := range steps {
		switch s.Status {
		case trace.StepSucceeded, trace.StepDefaulted, trace.StepFellBack, trace.StepSkipped:
			done[s.StepID] = true
		}
	}
	var problems, env []string
	keysOnly := true
	for _, u := range failed {
		if done[u.step] {
			continue
		}
		name := u.name
		if name == "" {
			name = DefaultModel
		}
		problems = append(problems, fmt.Sprintf("step %s (model %s): %v", u.step, name, u.err))
		var ke *provider.KeyError
		if errors.As(u.err, &ke) {
			if !slices.Contains(env, ke.Env) {
				env = append(env, ke.Env)
			}
		} else {
			keysOnly = false
		}
	}
	if len(problems) == 0 {
		return nil
	}
	err := fmt.Errorf("run %s cannot resume, nothing ran: a model it may still call does not open: %s", id, strings.Join(problems, "; "))
	if !keysOnly {
		return runsErr(ClassFormat, Hint{Code: HintFlowDoesNotLoad, RunID: id}, err)
	}
	slices.Sort(env)
	return runsErr(ClassBusiness, Hint{Code: HintNeedsAPIKey, RunID: id, Env: env}, err)
}
