package session

import (
	"context"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/trace"
)

// Turn is one model reply of an agent run and what became of its calls
// (N from 1; Final marks the answer).
type Turn = agent.Turn

// Call is one tool call of a turn: the tool, its arguments as the model
// wrote them, its status, the observation the model was shown, why it
// waits, and an execute_plan call's sub-run (PlanRun).
type Call = agent.Call

// CallStatus is where a call stands.
type CallStatus = agent.CallStatus

// The statuses of a call (see Call.Status).
const (
	// StatusChosen: chosen by the model, not settled (running, or the
	// process died).
	StatusChosen = agent.StatusChosen
	// StatusOK: the tool answered.
	StatusOK = agent.StatusOK
	// StatusFailed: the tool failed; the observation says why.
	StatusFailed = agent.StatusFailed
	// StatusInvalid: an unknown tool or arguments that break its schema;
	// nothing ran.
	StatusInvalid = agent.StatusInvalid
	// StatusBlocked: the gate refused the call; nothing ran.
	StatusBlocked = agent.StatusBlocked
	// StatusWaiting: the call waits for a person's approval.
	StatusWaiting = agent.StatusWaiting
	// StatusRejected: a person rejected the call; nothing ran.
	StatusRejected = agent.StatusRejected
	// StatusUnknown: the process died while a call with effects ran; a
	// person settles it.
	StatusUnknown = agent.StatusUnknown
)

// PlanRun is the sub-run of an execute_plan call: its status, its step
// budget (MaxSteps) and the tool calls made against it, each plan step.
type PlanRun = agent.PlanRun

// SubRun is the sub-run of a call of an agent called as a tool (a
// sub-agent), or of a handoff: its task, status, turns and answer.
type SubRun = agent.SubRun

// SubRunStatus is where a SubRun stands.
type SubRunStatus = agent.SubRunStatus

// The statuses of a SubRun.
const (
	SubRunning = agent.SubRunning
	// SubAnswered: the agent answered (a handoff's answer is its caller's).
	SubAnswered = agent.SubAnswered
	// SubWaiting: calls of the sub-run wait for a person.
	SubWaiting = agent.SubWaiting
	// SubFailed: its budget, its model, or a hand-back it could not make.
	SubFailed = agent.SubFailed
	// SubRefused: refused before it ran (a recursion, no budget left).
	SubRefused = agent.SubRefused
	// SubHandedBack: the agent handed the conversation back (Back).
	SubHandedBack = agent.SubHandedBack
)

// PlanRunStep is what became of one step of a PlanRun.
type PlanRunStep = agent.PlanRunStep

// PlanRunStatus is where a PlanRun stands.
type PlanRunStatus = agent.PlanRunStatus

// The statuses of a PlanRun.
const (
	PlanSucceeded = agent.PlanSucceeded
	// PlanFailed: a step failed or the budget ran out.
	PlanFailed = agent.PlanFailed
	// PlanRejected: the plan was refused before anything ran.
	PlanRejected = agent.PlanRejected
	// PlanWaiting: plan steps wait for a person.
	PlanWaiting = agent.PlanWaiting
)

// Usage sums an agent run's turns: turns, tool calls, model calls, tokens.
type Usage = agent.Usage

// HandBack is a transfer of the conversation back to an agent before the
// one that made it (a handoff to an agent on the chain).
type HandBack = agent.HandBack

// AnsweredBy names the agent that gave the final answer of turns when the
// conversation had been handed over: the agents handed over to,
// outermost first; nil when the session's own agent answered.
func AnsweredBy(turns []Turn) []string { return agent.AnsweredBy(turns) }

// UsageOf sums turns.
func UsageOf(turns []Turn) Usage { return agent.UsageOf(&agent.Session{Turns: turns}) }

// Reply is what one message's run did.
type Reply struct {
	// Result is the run's result: its id, status (succeeded, waiting,
	// failed, cancelled), error and the approvals it waits on.
	Result *rein.Result
	// Answer is the agent's answer (a string, or the JSON value under an
	// output schema): the run's output of step "agent", nil until it
	// answered.
	Answer any
	// Turns are the run's transcript, and Usage their sum.
	Turns []Turn
	Usage Usage
	// AnsweredBy names the agent that answered when the conversation was
	// handed over (AnsweredBy); the session's next message goes to it.
	AnsweredBy []string
}

// Reply reads back what the agent run res did: its answer, transcript
// and usage. A surface that started the run itself (Next) calls it with
// the run's result. Errors are the store's, naming the run.
func (s *Service) Reply(ctx context.Context, res *rein.Result) (*Reply, error) {
	turns, err := s.Transcript(ctx, res.RunID)
	if err != nil {
		return nil, err
	}
	return &Reply{Result: res, Answer: res.Outputs[project.AgentStep], Turns: turns, Usage: UsageOf(turns), AnsweredBy: AnsweredBy(turns)}, nil
}

// Transcript returns the turns of the agent run runID as its journal
// holds them: every committed turn of its latest attempt, each call with
// its outcome so far (a waiting call StatusWaiting). A run that is not an agent run has
// none. Errors are the store's (the run's journal that does not read or
// decode), naming the run.
func (s *Service) Transcript(ctx context.Context, runID string) ([]Turn, error) {
	return engine.AgentTranscript(ctx, s.st, runID, project.AgentStep, 0)
}

// CallOf is the agent's call an event records, with its turn: a call
// record with an agent part (journal version 3), or an agent_call event
// of an older journal. ok is false for any other event; err names a
// record that does not decode.
func CallOf(ev *trace.Event) (c Call, turn int, ok bool, err error) {
	return engine.AgentCallOf(ev)
}
