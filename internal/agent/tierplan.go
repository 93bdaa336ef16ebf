package agent

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// mustPlan is the observation of a direct call of bt that the run's risk
// tier refuses, "" when the call may go on: from safety.TierPlan, an
// agent that offers execute_plan calls its side-effect tools through a
// plan (checked whole, its steps approved and reviewed as one), not one
// by one. A call a person approved, a tool plans may not call (effect
// external without allow_external) and an agent without execute_plan are
// left to the gate's controls.
func (l *Loop) mustPlan(ctx context.Context, bt *boundTool, approved bool) string {
	p := l.plannerTool()
	if p == nil || bt == p || approved || !safety.SideEffect(bt.spec.Effect) {
		return ""
	}
	if bt.spec.Effect == tool.EffectExternal && !l.planner.opts.AllowExternal {
		return ""
	}
	rr := safety.RunRiskFrom(ctx)
	if rr == nil || rr.Tier() < safety.TierPlan {
		return ""
	}
	return fmt.Sprintf("refused: the run is at risk tier %d, where side-effect tools are called through %s, not one by one. "+
		"Call %s with a plan whose steps include this call of %s (and the reads it depends on); nothing ran.",
		rr.Tier(), plan.MetaTool, plan.MetaTool, l.toolWire(bt))
}

// toolWire is the name the model knows bt by.
func (l *Loop) toolWire(bt *boundTool) string {
	if bt.wire != "" {
		return bt.wire
	}
	return bt.spec.Name
}
