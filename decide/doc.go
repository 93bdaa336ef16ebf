// Package decide is the public surface of rein's decision runtimes outside
// a flow: a plan (JSON steps of tool calls, what a planner proposes)
// checked against the tools of a rein.yaml and executed through rein's
// invocation pipeline and the rein.yaml's policy gate, and a request
// routed by a routes file (rules first, then a semantic router over a
// closed set of routes). rein plan validate|run and rein route are thin
// callers of it; the engine's plan and route steps use the same runtimes
// (internal/plan, internal/route) from inside a flow.
//
// The values it returns are the runtimes' own, named here (Plan, Problem,
// PlanEvent, StepError, Routes, RouteResult, RouteRequest, RoutesError):
// one type, read through one public name, as rein.Result is the engine's.
//
//	tb, _ := project.LoadConfig("rein.yaml", nil)
//	cat, _ := decide.NewCatalog(tb, decide.PlanOptions{})
//	checked, _ := decide.CheckPlan(cat, data)
//	if checked.Problems == nil {
//		outputs, err := checked.Run(ctx, decide.RunOptions{Gate: tb.Config.Policy.Policy()})
//	}
package decide
