package engine_test

import (
	"context"
	"sync"

	"github.com/reinhq/rein/model"
)

// spyModel records every request before passing it on.
type spyModel struct {
	inner model.Model
	mu    sync.Mutex
	reqs  []model.Request
}

func (s *spyModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, *req)
	s.mu.Unlock()
	return s.inner.Generate(ctx, req)
}

// corrective returns the corrective request of a step, or nil.
func (s *spyModel) corrective(step string) *model.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.reqs {
		if s.reqs[i].StepID == step && s.reqs[i].Corrective {
			return &s.reqs[i]
		}
	}
	return nil
}
