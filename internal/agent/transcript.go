package agent

import (
	"fmt"
	"strconv"
	"time"

	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value"
)

// Session is one task of an agent and everything the loop has done for it:
// the conversation before the task (History, for multi-turn sessions), the
// task, and the committed turns. Run appends to Turns; a Session rebuilt
// from a journal continues where it stopped.
type Session struct {
	// History is the conversation before Task (earlier exchanges of a
	// chat session), sent before it on every turn.
	History []model.Message
	// Task is the user's request.
	Task string
	// Turns are the turns so far, oldest first.
	Turns []Turn
	// Decisions are people's decisions on calls that wait (approval) or
	// whose outcome is unknown, by the call's Ref (turn<t>/call<c>).
	Decisions map[string]Decision
	// Started is when the task began, for the wall-time budget. Zero:
	// when Run is first called.
	Started time.Time
	// Agent, when set, continues the conversation with the agent that
	// answered it last after handoffs (AnsweredBy of the last exchange:
	// the names of the agents handed over to, outermost first): a new
	// task's first turn hands it over to Agent[0] at once, without a
	// model call, and that agent continues with Agent[1:]. A name no
	// handoff of the loop's has is ignored (the model's turn comes).
	Agent []string
}

// Turn is one model reply and what became of its calls.
type Turn struct {
	// N numbers the turn from 1.
	N int `json:"n"`
	// Text is the reply's text (the final answer when Calls is empty).
	Text  string      `json:"text,omitempty"`
	Calls []Call      `json:"calls,omitempty"`
	Usage model.Usage `json:"usage"`
	// LLMCalls counts the model calls of the turn (2 with a corrective
	// request).
	LLMCalls int `json:"llm_calls"`
	// Final marks the final answer; Answer is its value (the text, or the
	// JSON value under an output schema).
	Final  bool `json:"final,omitempty"`
	Answer any  `json:"answer,omitempty"`
	// Guard are the output guardrails with on_trip: ask the final answer
	// tripped: it is accepted once a person approves each (GuardRef).
	Guard []GuardTrip `json:"guard,omitempty"`
	// Context is what the turn's request left out of the conversation to
	// fit the context budget (Config.Context), when it compacted it
	// further than the turns before; the later turns' requests leave the
	// same out, at least.
	Context *Compaction `json:"context,omitempty"`
}

// CallStatus is where a call stands.
type CallStatus string

// Call statuses.
const (
	// StatusChosen: the model chose the call and it passed the loop's own
	// checks; it has not settled (running, or the process died).
	StatusChosen CallStatus = "chosen"
	StatusOK     CallStatus = "ok"     // the tool answered
	StatusFailed CallStatus = "failed" // the tool failed; the observation says why
	// StatusInvalid: unknown tool, arguments not a JSON object, or
	// arguments that break the tool's input schema; nothing ran.
	StatusInvalid CallStatus = "invalid"
	StatusBlocked CallStatus = "blocked" // the gate refused it; nothing ran
	// StatusWaiting: the call waits for a person's approval.
	StatusWaiting  CallStatus = "waiting"
	StatusRejected CallStatus = "rejected" // a person rejected it; nothing ran
	// StatusUnknown: the process died while a call that is neither
	// idempotent nor read-only ran; a person settles it.
	StatusUnknown CallStatus = "unknown"
)

// Call is one tool call of a turn.
type Call struct {
	// Index numbers the call within its turn, from 1.
	Index int `json:"index"`
	// ID is the model's id for the call.
	ID   string `json:"id"`
	Tool string `json:"tool"`
	// Args are the arguments exactly as the model wrote them; an approved
	// call runs exactly these.
	Args   string     `json:"args"`
	Status CallStatus `json:"status"`
	// Key is the call's idempotency key.
	Key string `json:"key,omitempty"`
	// Observation is what the model is shown: the output as JSON, or what
	// went wrong, at most Config.ObservationLimit bytes plus a note.
	Observation string `json:"observation,omitempty"`
	// Blob references the whole observation when it was cut.
	Blob string `json:"blob,omitempty"`
	// Reason says why a call waits (who asks for approval).
	Reason string `json:"reason,omitempty"`
	// Plan is the progress of an execute_plan call that waits for people:
	// the plan steps it completed and those that wait for approval. The
	// call runs again once every waiting step is decided, continuing the
	// plan from there.
	Plan *PlanWait `json:"plan,omitempty"`
	// PlanRun is the sub-run of an execute_plan call: its status, step
	// budget and steps (see PlanRun).
	PlanRun *PlanRun `json:"plan_run,omitempty"`
	// Sub is the sub-run of a call of a sub-agent (a Tool with Agent):
	// its turns as committed, its status, answer and waiting calls.
	Sub *SubRun `json:"sub,omitempty"`
	// Back is the hand-back a call of a hand-back tool made: the
	// conversation went back to that agent (handback.go).
	Back *HandBack `json:"back,omitempty"`
	// Provenance says where each argument came from, traced from the
	// transcript (safety.Evidence.Trace): user, tool:<name>, db or
	// inferred, by JSON pointer. Verified lists the inferred arguments a
	// read tool's result of the run confirms.
	Provenance safety.Provenance     `json:"provenance,omitempty"`
	Verified   []safety.Verification `json:"verified,omitempty"`
	// Declaration is what the model declared with the call (the
	// declaration argument of a side-effecting tool, taken out of the
	// arguments), and Claims its facts checked against the run.
	Declaration *safety.Declaration   `json:"declaration,omitempty"`
	Claims      []safety.ClaimVerdict `json:"claims,omitempty"`
	// ArgsSHA is the sha256 (hex) of the canonical JSON of the arguments
	// the tool is called with (journal.Call.ArgsSHA's digest), set when
	// the call waits for a person or is dispatched with an approval: an
	// approval is for exactly these.
	ArgsSHA string `json:"args_sha256,omitempty"`
	// Rule says who asked for the approval the call waits for: the gate's
	// rule ("policy gate …") or the tool's "approval: required".
	Rule string `json:"rule,omitempty"`
	// Consumed are the approvals this call used, each once: before an
	// approved call (or an execute_plan call continuing with approved plan
	// steps) is dispatched it is journaled StatusChosen with them, so a
	// resume that finds it without an outcome treats it as any chosen call
	// that may have run (run again if its tool is safe to repeat, else
	// StatusUnknown) and never counts them again.
	Consumed []Consumed `json:"consumed,omitempty"`
	// Reconciled is what its tool's check found about the call after a
	// crash (journal.ReconciledHappened, journal.ReconciledNotHappened),
	// set on the commit that records it; the call record carries it.
	Reconciled string `json:"reconciled,omitempty"`

	args      map[string]any      // Args decoded, once checked
	decisions map[string]Decision // by plan step: the decisions a waiting plan runs again with
	// subDecisions are the decisions on a sub-agent call's sub-run, by
	// its refs, and left what the caller's budgets leave it, set before
	// the call runs.
	subDecisions map[string]Decision
	left         *Budgets
	handover     handover // a handoff's: what the receiving agent sees
	// premise is set when the call's output contradicts its tool's
	// premise (or a plan step's did): the call was made, and the loop
	// makes no further call of the turn and takes no further turn.
	premise *tool.PremiseError
	// stop is the error that ends the caller's loop once the call is
	// committed (a sub-agent's model call the run's budget refused).
	stop error
}

// Consumed is an approval a call used: its id (the store's approval
// row) and what it named (Ref: turn<t>/call<c>, or
// turn<t>/call<c>/<plan step>).
type Consumed struct {
	ID  string `json:"id"`
	Ref string `json:"ref"`
}

// consumed reports whether c used the approval of decision d on ref
// already: the same approval id on the same ref (decisions without an id
// are used once per ref).
func (c *Call) consumed(d Decision, ref string) bool {
	for _, u := range c.Consumed {
		if u.ID == d.ID && u.Ref == ref {
			return true
		}
	}
	return false
}

// approvedItself reports whether a person's approval of c itself (not
// of a plan step) was used by it.
func (c *Call) approvedItself(turn int) bool {
	ref := Ref(turn, c.Index)
	for _, u := range c.Consumed {
		if u.Ref == ref {
			return true
		}
	}
	return false
}

// PlanWait is where a plan stopped for people: the steps it completed,
// the tool calls it made, and the steps that wait (each with its resolved
// args: an approved step runs exactly these).
type PlanWait struct {
	Completed []plan.StepResult `json:"completed"`
	Executed  int               `json:"executed"`
	Waiting   []plan.Waiting    `json:"waiting"`
}

// pending are the people's decisions c waits for: one per waiting plan
// step of an execute_plan call that waits (Ref "turn<t>/call<c>/<plan
// step>"), else one for the call (an execute_plan call in doubt is
// decided as a whole). kind is the Pending kind of c.
func (c *Call) pending(turn int, kind string) []Pending {
	if c.Sub != nil && c.Status == StatusWaiting {
		return c.subPending(turn)
	}
	if c.Plan == nil || kind == "unknown" {
		return []Pending{{Ref: Ref(turn, c.Index), Turn: turn, Call: c.Index, Tool: c.Tool, Args: c.Args, Kind: kind, Reason: c.Reason,
			ArgsSHA: c.ArgsSHA, Rule: c.Rule}}
	}
	ps := make([]Pending, 0, len(c.Plan.Waiting))
	for _, w := range c.Plan.Waiting {
		ps = append(ps, Pending{Ref: Ref(turn, c.Index) + "/" + w.ID, Turn: turn, Call: c.Index, Tool: w.Tool, Args: w.Args, Kind: kind,
			Reason: fmt.Sprintf("step %s of the plan of %s: %s", w.ID, plan.MetaTool, w.Reason), ArgsSHA: value.Digest([]byte(w.Args)), Rule: w.Reason})
	}
	return ps
}

// Ref names a call within its loop: "turn<t>/call<c>", the suffix of its
// idempotency key. Decisions are keyed by it.
func Ref(turn, call int) string {
	return "turn" + strconv.Itoa(turn) + "/call" + strconv.Itoa(call)
}

// Verdict is a person's decision on a call.
type Verdict string

// Verdicts.
const (
	// Approve runs the call with its recorded arguments (for an unknown
	// call: runs it again).
	Approve Verdict = "approve"
	// Reject runs nothing; the model is told "rejected by a person:
	// <comment>".
	Reject Verdict = "reject"
	// Settle (unknown calls) gives the call's output: Output becomes its
	// observation.
	Settle Verdict = "settle"
)

// Decision is a person's decision on a waiting or unknown call.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	Comment string  `json:"comment,omitempty"`
	Output  any     `json:"output,omitempty"`
	// ID is the approval's id (the store's row): an approval is used once
	// (Call.Consumed). A decision without one is used once for its call:
	// a later decision on that call needs an id of its own.
	ID string `json:"id,omitempty"`
	// Args are the arguments the person decided on (the approval's), when
	// known: an approved call runs only if its own arguments have the same
	// digest.
	Args string `json:"args,omitempty"`
}

// conversation is what the model sees, built once per Run and extended
// by each settled turn: earlier messages are never changed, so requests
// can share its backing array.
type conversation struct {
	msgs []model.Message
	upto int // the turns of the Session it holds
}

// extend appends the instructions, history and task (the first time) and
// the turns of s it does not hold yet.
func (c *conversation) extend(l *Loop, s *Session) []model.Message {
	if c.msgs == nil {
		n := 2 + len(s.History)
		for i := range s.Turns {
			n += 1 + len(s.Turns[i].Calls)
		}
		c.msgs = make([]model.Message, 0, n+8)
		if l.cfg.Instructions != "" {
			c.msgs = append(c.msgs, model.Message{Role: model.System, Content: l.cfg.Instructions})
		}
		for _, m := range s.History {
			if len(m.ToolCalls) > 0 {
				// an earlier run's calls, under the names the model knows
				calls := make([]model.ToolCall, len(m.ToolCalls))
				for j, tc := range m.ToolCalls {
					calls[j] = model.ToolCall{ID: tc.ID, Name: l.wireName(tc.Name), Args: tc.Args}
				}
				m.ToolCalls = calls
			}
			c.msgs = append(c.msgs, m)
		}
		c.msgs = append(c.msgs, model.Message{Role: model.User, Content: s.Task})
	}
	for ; c.upto < len(s.Turns); c.upto++ {
		t := &s.Turns[c.upto]
		m := model.Message{Role: model.Assistant, Content: t.Text}
		if len(t.Calls) > 0 {
			m.ToolCalls = make([]model.ToolCall, len(t.Calls))
			for j, call := range t.Calls {
				m.ToolCalls[j] = model.ToolCall{ID: call.ID, Name: l.wireName(call.Tool), Args: call.Args}
			}
		}
		c.msgs = append(c.msgs, m)
		for _, call := range t.Calls {
			c.msgs = append(c.msgs, model.Message{Role: model.Tool, ToolCallID: call.ID, Content: call.Observation,
				IsError: call.Status != StatusOK})
		}
	}
	return c.msgs[:len(c.msgs):len(c.msgs)]
}
