package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
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

// Message is one message of a session's earlier conversation, as the
// agent's input "history" holds it: Role is "user" (a message sent) or
// "assistant" (the agent's answer to it).
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Input is the input of one message's agent run: the message as the task
// and the session's earlier conversation, oldest first. Its JSON is what
// the agent flow's inputs declare ({task, history}).
type Input struct {
	Task    string    `json:"task"`
	History []Message `json:"history,omitempty"`
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
	history, err := s.History(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return &Request{Input: Input{Task: message, History: history}, Options: &rein.RunOptions{Session: sessionID}}, nil
}

// History returns the earlier conversation the session's next message
// would get, oldest first: of the session's latest runs of this agent
// (Config.MaxMessages of them), each succeeded run's task and answer (a
// structured answer as JSON), newest first while they fit the budget; an
// exchange that does not fit ends the history, left out whole, with the
// older ones. Failed and cancelled runs add nothing. An empty sessionID
// has none. Errors as Next's, but for the message.
func (s *Service) History(ctx context.Context, sessionID string) ([]Message, error) {
	if sessionID == "" {
		return nil, nil
	}
	list, err := s.st.ListRuns(ctx, &store.ListRunsParams{Session: sessionID, Flow: s.p.Flow.Name, Limit: s.maxMessages})
	if err != nil {
		return nil, fmt.Errorf("session %s: list its runs: %w", sessionID, err)
	}
	if len(list) > 0 && !list[0].Finished() {
		return nil, s.waiting(ctx, sessionID, list[0])
	}
	size := 0
	var rev []Message // newest first
	for _, r := range list {
		if r.Status != trace.RunSucceeded {
			continue
		}
		var in struct {
			Task string `json:"task"`
		}
		if err := json.Unmarshal(r.Input, &in); err != nil || in.Task == "" {
			continue
		}
		answer, err := s.answer(ctx, r.ID)
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", sessionID, err)
		}
		if len(rev)+2 > s.maxMessages || size+len(in.Task)+len(answer) > s.maxBytes {
			break
		}
		size += len(in.Task) + len(answer)
		rev = append(rev, Message{"assistant", answer}, Message{"user", in.Task})
	}
	history := make([]Message, 0, len(rev))
	for i := len(rev) - 1; i >= 0; i-- {
		history = append(history, rev[i])
	}
	return history, nil
}

// answer is the agent step's output of run id: a string answer as itself,
// a structured one as JSON, "" when it has none.
func (s *Service) answer(ctx context.Context, id string) (string, error) {
	steps, err := s.st.Steps(ctx, id)
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
