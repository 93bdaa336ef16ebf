package plan

import (
	"context"
	"errors"
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// Planner proposes plans. Plan is asked for the first plan of a goal and,
// after a step failed, for a revised one (req.Failure set). What it returns
// is candidate data: Run validates it before anything runs. Implementations
// must honour ctx and be safe for concurrent use.
type Planner interface {
	Plan(ctx context.Context, req *Request) (*Plan, error)
}

// Request is what a planner is asked.
type Request struct {
	Goal string
	// Catalog is what the plan will be validated against: the tools it may
	// call and the longest plan allowed.
	Catalog *Catalog
	// Replan is 0 for the first plan and n for the nth revision.
	Replan int
	// Completed are the steps already done in this run, with their outputs.
	// They are not run again; a new plan may $ref their ids.
	Completed []StepResult
	// Failure is the observation that prompted a revision; nil at first.
	Failure *Failure
	// Previous is the plan that failed; nil at first.
	Previous *Plan
	// RunID and StepID identify the run and the step being planned.
	RunID  string
	StepID string
	// OnReject, when set, is told of every reply the planner rejected and
	// asks again about (a corrective request follows), with the problems.
	// Run sets it to emit a PlanRejected event.
	OnReject func(problems error)
}

// Failure describes a failed step, for the planner and for results.
type Failure struct {
	StepID string      `json:"step_id"`
	Tool   string      `json:"tool"`
	Class  fault.Class `json:"error_type"`
	Error  string      `json:"error"`
}

// Limits are the three budgets of a planned run. Each tightens, never
// loosens, the cap of the catalog or executor it applies to.
type Limits struct {
	// MaxSteps caps each plan's length (error budget "max_steps"). Zero
	// means the catalog's MaxSteps.
	MaxSteps int
	// MaxReplans is how many times the planner may revise the plan after a
	// step failed (error budget "max_replans"). Zero means no revision.
	MaxReplans int
	// MaxExecuted caps the tool calls of the whole run, over every plan
	// (error budget "max_executed_steps"). Zero means the executor's
	// MaxExecuted.
	MaxExecuted int
}

// Result is what a planned run did.
type Result struct {
	Goal string
	// Plan is the last plan proposed (nil when the planner never gave one).
	Plan *Plan
	// Output is the output of the last step of the last plan, when that
	// plan succeeded.
	Output any
	// Outputs are the outputs of every completed step by step id, over all
	// plans; Completed lists the same steps by plan, then in plan order.
	Outputs   map[string]any
	Completed []StepResult
	// Executed counts tool calls; Replans the revisions asked for.
	Executed int
	Replans  int
	// Failures are the step failures met, in order; the last one ended the
	// run when Run returned a step error or the max_replans budget error.
	Failures []Failure
}

// Run asks pl for a plan towards goal, has ex validate and execute it, and
// on a step failure asks pl again — with the failure as an observation and
// the completed steps — at most lim.MaxReplans times. Completed steps are
// never executed again: replanning is not retry. It returns the Result
// (never nil: on error it holds what completed) and an error that is one
// of: the planner's error; a *ValidationError (nothing of that plan ran;
// fault.BudgetOf says "max_steps" for a plan too long); a budget error
// "max_executed_steps" or "max_replans"; the context's error; a
// *WaitError (steps wait for a person: no revision); or, when the
// failure is not one a new plan can address (a budget, a cancellation), the
// *StepError. The run's identity (for idempotency keys, the gate and
// events) is the tool.CallInfo in ctx, if any.
func Run(ctx context.Context, pl Planner, ex *Executor, goal string, lim Limits) (*Result, error) {
	return RunFrom(ctx, pl, ex, goal, lim, nil)
}

// Progress is how far a planned run had come when its process stopped: the
// plan it was executing, that plan's number, and the steps completed by
// then (over every plan, in order), as the caller recorded them.
type Progress struct {
	Plan *Plan
	// Number is the plan's number: 1, then 1 more per replan.
	Number int
	// Completed are the steps that succeeded; Executed counts the tool
	// calls made (failed ones included).
	Completed []StepResult
	Executed  int
	// Decisions are people's decisions on the steps that waited for them
	// (ExecutorConfig.Pausable), by plan step id.
	Decisions map[string]Decision
	// Evidence is the run's record of the user's input and tool outputs
	// (State.Evidence); RunFrom adds the completed steps' outputs to it.
	// A Progress with only Evidence set starts from the beginning.
	Evidence *safety.Evidence
}

// RunFrom is Run continuing from p (nil: from the start, as Run): the
// planner is not asked for p.Plan again, p.Plan runs as plan number
// p.Number (so its calls keep their idempotency keys), and the completed
// steps it lists again are reused, not run again. A failure after that
// asks the planner for a revision as Run does, counting p.Number-1
// revisions as made. The Result's Failures are those met after p.
func RunFrom(ctx context.Context, pl Planner, ex *Executor, goal string, lim Limits, p *Progress) (*Result, error) {
	res := &Result{Goal: goal}
	info := tool.CallInfoFrom(ctx)
	st := &State{RunID: info.RunID, StepID: info.StepID, MaxExecuted: lim.MaxExecuted}
	var resumed *Plan
	if p != nil {
		st.Evidence = p.Evidence
	}
	if p != nil && p.Plan != nil {
		st.restore(p)
		resumed, res.Replans = p.Plan, max(p.Number-1, 0)
		if st.Evidence != nil {
			for _, c := range p.Completed {
				spec := tool.Spec{Name: c.Tool}
				if t := ex.tools[c.Tool]; t != nil {
					spec = t.Spec()
				}
				st.Evidence.AddTool("plan step "+c.ID, &spec, c.Output)
			}
		}
	}
	defer func() {
		res.Outputs, res.Completed, res.Executed = st.Outputs(), st.Completed(), st.Executed()
	}()
	cat, err := ex.cfg.Catalog.Restrict(nil, lim.MaxSteps)
	if err != nil {
		return res, err
	}
	maxReplans := max(lim.MaxReplans, 0)
	req := &Request{Goal: goal, Catalog: cat, RunID: st.RunID, StepID: st.StepID, Replan: res.Replans}
	for {
		p := resumed
		if p == nil {
			attempt := req.Replan + 1
			req.OnReject = func(problems error) {
				ex.emit(Event{Kind: PlanRejected, RunID: st.RunID, StepID: st.StepID, Attempt: attempt, Status: RejectedCorrected,
					ErrorClass: fault.Format, Error: problems.Error()})
			}
			var err error
			if p, err = pl.Plan(ctx, req); err != nil {
				if ctx.Err() != nil {
					return res, fmt.Errorf("planner stopped: %w", context.Cause(ctx))
				}
				if rej := (*model.RejectedError)(nil); errors.As(err, &rej) {
					ex.emit(Event{Kind: PlanRejected, RunID: st.RunID, StepID: st.StepID, Attempt: attempt, Status: RejectedFinal,
						ErrorClass: fault.ClassOf(err), Error: rej.Problems.Error()})
				}
				return res, plannerError(err)
			}
			ex.emit(Event{Kind: PlanProposed, RunID: req.RunID, StepID: req.StepID, Attempt: attempt, Plan: p})
		}
		resumed, res.Plan = nil, p
		err := ex.execute(ctx, p, st, cat)
		if err == nil {
			if n := len(p.Steps); n > 0 {
				res.Output, _ = st.Output(p.Steps[n-1].ID)
			}
			return res, nil
		}
		var se *StepError
		if !errors.As(err, &se) {
			return res, err
		}
		f := Failure{StepID: se.StepID, Tool: se.Tool, Class: fault.ClassOf(se.Err), Error: se.Cause()}
		res.Failures = append(res.Failures, f)
		if f.Class == fault.Budget || f.Class == fault.Cancelled || tool.AsPremise(se.Err) != nil {
			return res, err // a failed premise is not planned around: the run pauses
		}
		if req.Replan >= maxReplans {
			return res, fault.BudgetErr("max_replans", "plan step %s failed and the plan may not be revised again (max_replans=%d): %w", se.StepID, maxReplans, se)
		}
		req = &Request{Goal: goal, Catalog: cat, Replan: req.Replan + 1, Completed: st.Completed(), Failure: &f, Previous: p,
			RunID: req.RunID, StepID: req.StepID}
		res.Replans = req.Replan
		ex.emit(Event{Kind: Replanning, RunID: st.RunID, StepID: st.StepID, Attempt: req.Replan + 1, PlanStep: f.StepID, Tool: f.Tool, ErrorClass: f.Class, Error: f.Error})
	}
}

// plannerError keeps a planner's error, making a plan that was too long
// (even after a corrective request) the max_steps budget error.
func plannerError(err error) error {
	var ve *ValidationError
	if errors.As(err, &ve) && fault.BudgetOf(ve) == "max_steps" && fault.ClassOf(err) != fault.Budget {
		return fault.BudgetErr("max_steps", "planner: %w", err)
	}
	return fmt.Errorf("planner: %w", err)
}
