package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// The default history budget (Config): the latest 20 messages (10
// exchanges) within 16 KiB of content.
const (
	DefaultMaxMessages = 20
	DefaultMaxBytes    = 16 << 10
)

// Config configures a Service. A nil *Config means every default.
type Config struct {
	// MaxMessages caps the messages of the history a run gets (each
	// earlier exchange is two: the user's message and the answer). It is
	// also how many of the session's latest runs are read: a failed or
	// cancelled run among them adds nothing. Defaults to
	// DefaultMaxMessages; negative is an error.
	MaxMessages int
	// MaxBytes caps the bytes of content (messages and answers) of the
	// history. Defaults to DefaultMaxBytes; negative is an error.
	MaxBytes int
}

// Service holds the chat sessions of one agent: each message is one agent
// run of its client, recorded with the session's id. A session is the
// runs of the client's store with that id and the agent's flow name, so a
// session id names one conversation per agent. A Service is safe for
// concurrent use; it does not serialise two messages of one session sent
// at once (each runs with the history before it).
type Service struct {
	c           *rein.Client
	p           *project.Project
	st          store.Store
	maxMessages int
	maxBytes    int
}

// New returns the Service of the agent project p (an agent folder loaded
// with Client.Load or project.LoadAgent) over c, whose store must keep
// runs (rein.Config Store or DB): a session is the runs kept there. It
// returns a business *fault.Error for a nil client or project, a project
// that is not an agent, a client that keeps no runs and a negative budget.
// The caller keeps closing c and p.
func New(c *rein.Client, p *project.Project, cfg *Config) (*Service, error) {
	if c == nil {
		return nil, fault.Errorf(fault.Business, "session: New needs a *rein.Client (rein.Open)")
	}
	if p == nil || p.Flow == nil {
		return nil, fault.Errorf(fault.Business, "session: New needs the agent's project (Client.Load of an agent folder)")
	}
	if len(p.Flow.Steps) != 1 || p.Flow.Steps[0].ID != project.AgentStep || p.Flow.Steps[0].Type != flow.Agent {
		return nil, fault.Errorf(fault.Business, "session: %s is not an agent: load an agent folder (agent.yaml, no flow.yaml) with Client.Load or project.LoadAgent", p.Flow.File)
	}
	if store.IsEphemeral(c.Store()) {
		return nil, fault.Errorf(fault.Business, "session: the client keeps no runs, so a session could not be continued: open it with rein.Config Store or DB")
	}
	s := &Service{c: c, p: p, st: c.Store(), maxMessages: DefaultMaxMessages, maxBytes: DefaultMaxBytes}
	if cfg != nil {
		if cfg.MaxMessages < 0 || cfg.MaxBytes < 0 {
			return nil, fault.Errorf(fault.Business, "session: a negative history budget (MaxMessages %d, MaxBytes %d): give 0 for the default or a positive limit", cfg.MaxMessages, cfg.MaxBytes)
		}
		if cfg.MaxMessages > 0 {
			s.maxMessages = cfg.MaxMessages
		}
		if cfg.MaxBytes > 0 {
			s.maxBytes = cfg.MaxBytes
		}
	}
	return s, nil
}

// Message is one item of a session's earlier conversation, as the
// agent's input "history" holds it: Role is "user" (a message sent),
// "assistant" (the agent's words: an answer, or the text and ToolCalls of
// a turn that called tools) or "tool" (what a call of the turn before
// returned: ToolCallID names the call, Tool its tool, Content the
// observation the model was shown, IsError a call that did not succeed).
// A history of an older rein holds only user and assistant text; it
// reads the same.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the calls an assistant message made, in order.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID and Tool name the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Tool       string `json:"tool,omitempty"`
	IsError    bool   `json:"is_error,omitempty"`
}

// ToolCall is one call of an assistant message of the history: the
// model's id for it (unique within the history), the tool's own name and
// the arguments as the model wrote them.
type ToolCall struct {
	ID   string `json:"id"`
	Tool string `json:"tool"`
	Args string `json:"args"`
}

// Input is the input of one message's agent run: the message as the task
// and the session's earlier conversation, oldest first. Its JSON is what
// the agent flow's inputs declare ({task, history}).
type Input struct {
	Task    string    `json:"task"`
	History []Message `json:"history,omitempty"`
	// Agent (last_agent) names the agent that answered the session's last message
	// when the conversation had been handed over (AnsweredBy: the agents
	// handed over to, outermost first): the run hands it straight to
	// that agent, as the OpenAI Agents SDK continues with its last_agent.
	// Empty: the session's own agent takes the message.
	Agent []string `json:"last_agent,omitempty"`
}

// InputOf is the Input run r was started with (its task and history).
// Errors: an input that is not an agent run's, naming the run.
func InputOf(r *store.Run) (Input, error) {
	var in Input
	if err := json.Unmarshal(r.Input, &in); err != nil {
		return Input{}, fmt.Errorf("run %s: its input is not an agent run's {task, history}: %w", r.ID, err)
	}
	return in, nil
}

// Request is what a surface starts one message's run with:
// Client.Start(ctx, p, &r.Input, r.Options).
type Request struct {
	Input Input
	// Options record the run with the session's id.
	Options *rein.RunOptions
}

// Ask sends message to the session sessionID: it runs the agent once
// (Next, then Client.Start) and returns what the run did (Reply), until
// it answers, fails or waits for a person. A run that ran and failed or
// waits is no error: see Reply.Result.Status. Errors are Next's and
// Client.Start's (a *fault.Error), and reading the transcript's.
func (s *Service) Ask(ctx context.Context, sessionID, message string) (*Reply, error) {
	req, err := s.Next(ctx, sessionID, message)
	if err != nil {
		return nil, err
	}
	res, err := s.c.Start(ctx, s.p, &req.Input, req.Options)
	if err != nil {
		return nil, err
	}
	return s.Reply(ctx, res)
}

// Next returns the run message makes in the session sessionID, without
// starting it: the message as the task, the session's history within the
// budget (History) and the options that record the run with the session.
// An empty sessionID is a run of its own: no history, in no session.
// Errors: an empty message is a business *fault.Error; a session whose
// newest run has not finished is a conflict *fault.Error with
// fault.HintSessionWaiting wrapping a *WaitingError (the same message may
// be sent once that run finishes); a store that fails to read is wrapped.
func (s *Service) Next(ctx context.Context, sessionID, message string) (*Request, error) {
	if message == "" {
		return nil, fault.Errorf(fault.Business, "session %s: the message is empty: say what the agent should do", sessionID)
	}
	history, last, err := s.history(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return &Request{Input: Input{Task: message, History: history, Agent: last}, Options: &rein.RunOptions{Session: sessionID}}, nil
}

// LastAgent names the agent that answered the session's newest succeeded
// message (AnsweredBy): the next message goes to it. Empty when the
// session's own agent answered, or the session has no answer yet.
// Errors as History's.
func (s *Service) LastAgent(ctx context.Context, sessionID string) ([]string, error) {
	_, last, err := s.history(ctx, sessionID)
	return last, err
}

// History returns the earlier conversation the session's next message
// would get, oldest first: of the session's latest runs of this agent
// (Config.MaxMessages of them), each succeeded run's exchange — its task,
// then each turn that called tools as an assistant message with its calls
// followed by one tool message per call (the observation the model was
// shown), then the answer (a structured answer as JSON) — newest first
// while they fit the budget (every item counts as a message; content and
// arguments count as bytes); an exchange that does not fit ends the
// history, left out whole, with the older ones. Failed and cancelled runs
// add nothing. A call id the history already holds is renamed
// (h<n>_<id>, in its tool message too), so ids stay unique across runs.
// An empty sessionID has none. Errors as Next's, but for the message.
func (s *Service) History(ctx context.Context, sessionID string) ([]Message, error) {
	history, _, err := s.history(ctx, sessionID)
	return history, err
}

// history is History, and who answered the newest succeeded exchange
// (AnsweredBy of its transcript).
func (s *Service) history(ctx context.Context, sessionID string) ([]Message, []string, error) {
	if sessionID == "" {
		return nil, nil, nil
	}
	list, err := s.st.ListRuns(ctx, &store.ListRunsParams{Session: sessionID, Flow: s.p.Flow.Name, Limit: s.maxMessages})
	if err != nil {
		return nil, nil, fmt.Errorf("session %s: list its runs: %w", sessionID, err)
	}
	if len(list) > 0 && !list[0].Finished() {
		return nil, nil, s.waiting(ctx, sessionID, list[0])
	}
	size, count := 0, 0
	var rev [][]Message // exchanges, newest first
	var last []string
	found := false
	for _, r := range list {
		if r.Status != trace.RunSucceeded {
			continue
		}
		ex, turns, err := ExchangeOf(ctx, s.st, r)
		if err != nil {
			return nil, nil, fmt.Errorf("session %s: %w", sessionID, err)
		}
		if ex == nil {
			continue
		}
		if !found {
			found, last = true, AnsweredBy(turns)
		}
		n := exchangeBytes(ex)
		if count+len(ex) > s.maxMessages || size+n > s.maxBytes {
			break
		}
		size, count = size+n, count+len(ex)
		rev = append(rev, ex)
	}
	history := make([]Message, 0, count)
	for i := len(rev) - 1; i >= 0; i-- {
		history = append(history, rev[i]...)
	}
	uniqueCallIDs(history)
	return history, last, nil
}

// Exchange is what the succeeded agent run r of a session adds to its
// history: its task, each turn that called tools (an assistant message
// with the calls, then each call's observation as a tool message) and
// the answer (a structured one as JSON), read from st; nil for a run
// without a task. rein sessions show prints a session with it. Errors
// are the store's, naming the run.
func Exchange(ctx context.Context, st store.Store, r *store.Run) ([]Message, error) {
	ex, _, err := ExchangeOf(ctx, st, r)
	return ex, err
}

// ExchangeOf is Exchange, and the run's transcript it read (AnsweredBy
// of it names who answered).
func ExchangeOf(ctx context.Context, st store.Store, r *store.Run) ([]Message, []Turn, error) {
	in, err := InputOf(r)
	if err != nil || in.Task == "" {
		return nil, nil, nil //nolint:nilerr // not an agent run's input: it adds nothing
	}
	answer, err := answer(ctx, st, r.ID)
	if err != nil {
		return nil, nil, err
	}
	turns, err := engine.AgentTranscript(ctx, st, r.ID, project.AgentStep, 0)
	if err != nil {
		return nil, nil, err
	}
	ex := []Message{{Role: "user", Content: in.Task}}
	for i := range turns {
		t := &turns[i]
		if t.Final || len(t.Calls) == 0 {
			continue
		}
		m := Message{Role: "assistant", Content: t.Text, ToolCalls: make([]ToolCall, len(t.Calls))}
		for j := range t.Calls {
			c := &t.Calls[j]
			m.ToolCalls[j] = ToolCall{ID: c.ID, Tool: c.Tool, Args: c.Args}
		}
		ex = append(ex, m)
		for j := range t.Calls {
			c := &t.Calls[j]
			ex = append(ex, Message{Role: "tool", ToolCallID: c.ID, Tool: c.Tool, Content: c.Observation, IsError: c.Status != StatusOK})
		}
	}
	return append(ex, Message{Role: "assistant", Content: answer}), turns, nil
}

// exchangeBytes is what ex counts against Config.MaxBytes: its content
// and its calls' arguments.
func exchangeBytes(ex []Message) int {
	n := 0
	for i := range ex {
		n += len(ex[i].Content)
		for _, c := range ex[i].ToolCalls {
			n += len(c.Args)
		}
	}
	return n
}

// uniqueCallIDs renames, in place, each call id of history that an earlier
// call already used (or that is empty) to h<n>_<id>, and the tool messages
// after it that answer it.
func uniqueCallIDs(history []Message) {
	seen := map[string]bool{}
	var renamed map[string]string // of the latest assistant message
	for i := range history {
		m := &history[i]
		switch m.Role {
		case "assistant":
			renamed = nil
			for j := range m.ToolCalls {
				c := &m.ToolCalls[j]
				id := c.ID
				for n := 1; id == "" || seen[id]; n++ {
					id = "h" + strconv.Itoa(n) + "_" + c.ID
				}
				seen[id] = true
				if id != c.ID {
					if renamed == nil {
						renamed = map[string]string{}
					}
					renamed[c.ID] = id
					c.ID = id
				}
			}
		case "tool":
			if id, ok := renamed[m.ToolCallID]; ok {
				m.ToolCallID = id
			}
		}
	}
}

// answer is the agent step's output of run id: a string answer as itself,
// a structured one as JSON, "" when it has none.
func answer(ctx context.Context, st store.Store, id string) (string, error) {
	steps, err := st.Steps(ctx, id)
	if err != nil {
		return "", fmt.Errorf("read the answer of run %s: %w", id, err)
	}
	for _, sp := range steps {
		if sp.StepID != project.AgentStep || len(sp.Output) == 0 {
			continue
		}
		var text string
		if json.Unmarshal(sp.Output, &text) == nil {
			return text, nil
		}
		return string(sp.Output), nil
	}
	return "", nil
}

// WaitingError says that a session's newest run has not finished, so the
// session takes no new message: Run is that run's row, Pending the
// approvals it waits on (none while it runs). Its message names the
// session and the run; Ask and Next return it inside a conflict
// *fault.Error with fault.HintSessionWaiting.
type WaitingError struct {
	Session string
	Run     *store.Run
	Pending []*store.Approval
}

// Error says which run of which session has not finished.
func (e *WaitingError) Error() string {
	return fmt.Sprintf("session %s: run %s is %s; the conversation goes on once it finishes", e.Session, e.Run.ID, e.Run.Status)
}

// waiting returns the error of a session whose newest run, r, has not
// finished, with the approvals r waits on.
func (s *Service) waiting(ctx context.Context, sessionID string, r *store.Run) error {
	pending, err := s.st.Approvals(ctx, &store.ListApprovalsParams{RunID: r.ID, Status: store.ApprovalPending})
	if err != nil {
		return fmt.Errorf("session %s: read what run %s waits on: %w", sessionID, r.ID, err)
	}
	h := fault.Hint{Code: fault.HintSessionWaiting, RunID: r.ID, Status: string(r.Status)}
	for _, a := range pending {
		h.Waiting = append(h.Waiting, a.StepID)
	}
	return fault.Hinted(fault.Conflict, h, &WaitingError{Session: sessionID, Run: r, Pending: pending})
}
