package summary

import (
	"slices"
	"time"

	"github.com/reinhq/rein/trace"
)

// Summary is the digest of one trace. A trace file usually holds one run, but
// a sink shared by several runs holds more; Runs are in order of first
// appearance.
type Summary struct {
	Runs []Run `json:"runs"`
}

// Run is the digest of one run.
type Run struct {
	RunID string `json:"run_id"`
	Flow  string `json:"flow,omitempty"`
	// Status is the status of run_settled, or running when the trace has none
	// (the run is still going, or the process died).
	Status trace.RunStatus `json:"status"`
	// Duration is run_settled's duration_ms; without it, the time from
	// run_started (or the first event) to the last event.
	Duration   time.Duration `json:"-"`
	TokensIn   int           `json:"tokens_in"`  // sum over every model_call of the run
	TokensOut  int           `json:"tokens_out"` // sum over every model_call of the run
	ModelCalls int           `json:"model_calls"`
	// Failure is the error run_settled carries, if any.
	Failure *Failure `json:"failure,omitempty"`
	// Steps are in order of first appearance.
	Steps []Step `json:"steps"`
}

// Step is the digest of one step of a run.
type Step struct {
	StepID string `json:"step_id"`
	Type   string `json:"type,omitempty"`
	// Status is the status of step_settled; without it, running if the step
	// started, else pending.
	Status trace.StepStatus `json:"status"`
	// Attempts counts the distinct attempt numbers (1 is the first) seen on
	// attempt_failed, model_call and step_settled events; 0 for a step that
	// never ran.
	Attempts int `json:"attempts"`
	// Retries counts the failed attempts that another attempt followed;
	// normally Attempts-1.
	Retries int `json:"retries"`
	// Corrections counts the corrective requests made within attempts
	// after a model's reply broke the output schema or a planner's plan
	// broke validation (corrective_retry, and plan_rejected with status
	// corrected). They are neither attempts nor failures.
	Corrections int           `json:"corrections"`
	Duration    time.Duration `json:"-"` // step_settled's duration_ms
	TokensIn    int           `json:"tokens_in"`
	TokensOut   int           `json:"tokens_out"`
	ModelCalls  int           `json:"model_calls"`
	// Failure is (a copy of) the step's decisive failure: the error of step_settled if it
	// carries one, else the last failed attempt. It is nil when no attempt
	// failed and the step did not fail.
	Failure *Failure `json:"failure,omitempty"`
	// Failures lists every failed attempt in order, then the error of
	// step_settled when it is not the last attempt's error again.
	Failures []Failure `json:"failures,omitempty"`
}

// Failure is one failure and where it came from.
type Failure struct {
	Attempt int          `json:"attempt,omitempty"`
	Class   string       `json:"class,omitempty"`  // rein error class: transient, format, business, budget, …
	Origin  trace.Origin `json:"origin,omitempty"` // model, tool or engine
	Message string       `json:"message,omitempty"`
	Budget  string       `json:"budget,omitempty"` // the budget that ran out, for class budget
}

// FailedClasses returns the classes of the step's failed attempts, in order.
func (s *Step) FailedClasses() []string {
	var out []string
	for _, f := range s.Failures {
		out = append(out, f.Class)
	}
	return out
}

// runBuilder and stepBuilder hold what Summarize needs besides the result.
type runBuilder struct {
	run       Run
	steps     map[string]int // step id → index in run.Steps
	first     time.Time      // run_started time, or the first event's
	last      time.Time
	stepState []stepState
}

type stepState struct {
	attempts []int // distinct attempt numbers seen
	failed   []int // attempt numbers of attempt_failed events
	settled  bool
}

// Summarize digests events. It never fails: events it does not know are
// skipped, and a trace cut short gives running runs and steps.
func Summarize(events []trace.Event) *Summary {
	var order []*runBuilder
	runs := map[string]*runBuilder{}
	for i := range events {
		e := &events[i]
		b := runs[e.RunID]
		if b == nil {
			b = &runBuilder{run: Run{RunID: e.RunID, Status: trace.RunRunning}, steps: map[string]int{}}
			runs[e.RunID] = b
			order = append(order, b)
		}
		b.add(e)
	}
	s := &Summary{Runs: make([]Run, 0, len(order))}
	for _, b := range order {
		s.Runs = append(s.Runs, b.finish())
	}
	return s
}

func (b *runBuilder) add(e *trace.Event) {
	if !e.Time.IsZero() {
		if b.first.IsZero() || e.Kind == trace.RunStarted {
			b.first = e.Time
		}
		b.last = e.Time
	}
	if b.run.Flow == "" {
		b.run.Flow = e.Flow
	}
	if e.Kind == trace.ModelCall {
		b.run.ModelCalls++
		b.run.TokensIn += e.TokensIn
		b.run.TokensOut += e.TokensOut
	}
	if e.Kind == trace.RunSettled {
		b.run.Status = trace.RunStatus(e.Status)
		if e.DurationMS != 0 {
			b.run.Duration = e.Duration()
		}
		if f, ok := failureOf(e); ok {
			b.run.Failure = &f
		}
		return
	}
	if e.StepID == "" {
		return
	}
	i, ok := b.steps[e.StepID]
	if !ok {
		i = len(b.run.Steps)
		b.steps[e.StepID] = i
		b.run.Steps = append(b.run.Steps, Step{StepID: e.StepID, Status: trace.StepPending})
		b.stepState = append(b.stepState, stepState{})
	}
	addStep(&b.run.Steps[i], &b.stepState[i], e)
}

func addStep(s *Step, st *stepState, e *trace.Event) {
	if s.Type == "" {
		s.Type = e.StepType
	}
	switch e.Kind {
	case trace.StepStarted:
		if !st.settled {
			s.Status = trace.StepRunning
		}
	case trace.ModelCall:
		st.seen(e.Attempt)
		s.ModelCalls++
		s.TokensIn += e.TokensIn
		s.TokensOut += e.TokensOut
		if !st.settled {
			s.Status = trace.StepRunning
		}
	case trace.CorrectiveRetry:
		st.seen(e.Attempt)
		s.Corrections++
	case planRejected:
		if e.Status == correctedStatus {
			s.Corrections++
		}
	case trace.AttemptFailed:
		st.seen(e.Attempt)
		st.failed = append(st.failed, e.Attempt)
		f, _ := failureOf(e)
		s.Failures = append(s.Failures, f)
		s.Failure = &f
	case trace.StepSettled:
		st.seen(e.Attempt)
		st.settled = true
		s.Status = trace.StepStatus(e.Status)
		s.Duration = e.Duration()
		settle(s, e)
	}
}

// The plan executor's events are journalled with its own kinds (package
// plan); a plan_rejected with status corrected is the planner asking again.
const (
	planRejected    trace.Kind = "plan_rejected"
	correctedStatus string     = "corrected"
)

// settle records the failure a step_settled event carries.
func settle(s *Step, e *trace.Event) {
	f, ok := failureOf(e)
	if !ok {
		if s.Status == trace.StepFailed && s.Failure == nil {
			s.Failure = &Failure{Attempt: e.Attempt}
		}
		return
	}
	if n := len(s.Failures); n > 0 {
		last := s.Failures[n-1]
		if last.Class == f.Class && last.Message == f.Message && (f.Attempt == 0 || f.Attempt == last.Attempt) {
			if f.Origin == "" || f.Origin == last.Origin {
				s.Failure = &last
				return
			}
		}
	}
	s.Failures = append(s.Failures, f)
	s.Failure = &f
}

// failureOf returns the failure e describes, and whether it describes one.
func failureOf(e *trace.Event) (Failure, bool) {
	f := Failure{Attempt: e.Attempt, Class: e.ErrorClass, Origin: e.Origin, Message: e.Error, Budget: e.Budget}
	return f, f.Class != "" || f.Message != "" || f.Origin != "" || f.Budget != ""
}

func (st *stepState) seen(attempt int) {
	if attempt > 0 && !slices.Contains(st.attempts, attempt) {
		st.attempts = append(st.attempts, attempt)
	}
}

func (b *runBuilder) finish() Run {
	r := b.run
	if r.Duration == 0 && !b.first.IsZero() {
		r.Duration = b.last.Sub(b.first)
	}
	for i := range r.Steps {
		s, st := &r.Steps[i], &b.stepState[i]
		s.Attempts = len(st.attempts)
		maxAttempt := 0
		if len(st.attempts) > 0 {
			maxAttempt = slices.Max(st.attempts)
		}
		var retried []int
		for _, a := range st.failed {
			if a > 0 && a < maxAttempt && !slices.Contains(retried, a) {
				retried = append(retried, a)
			}
		}
		s.Retries = len(retried)
	}
	return r
}
