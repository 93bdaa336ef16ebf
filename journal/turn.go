package journal

import (
	"bytes"
	"encoding/json"

	"github.com/reinhq/rein/redact"
)

// Turn is the record of an agent turn (Kind AgentTurn, Event.AgentTurn):
// the model's reply as the agent's loop took it, committed before any of
// its calls runs. Its calls are as they stood then (chosen, or settled
// without running: invalid, blocked); each call's outcome is its own call
// record (Call.Agent), which a transcript fold lays over the turn's entry.
// The turn's tokens are its event's TokensIn and TokensOut. Journals
// before version 4 hold the turn as JSON in Event.Data (the agent loop's
// own turn type), which the engine's transcript fold still reads.
type Turn struct {
	// N numbers the turn from 1 within its step's attempt.
	N int `json:"n"`
	// Text is the reply's text (the final answer when Calls is empty).
	Text string `json:"text,omitempty"`
	// Calls are the calls the model chose, in its order: each a call
	// record with its Index, Name, Key, ArgsSHA and the loop's part
	// (Agent).
	Calls []Call `json:"calls,omitempty"`
	// LLMCalls counts the model calls of the turn (2 with a corrective
	// request).
	LLMCalls int `json:"llm_calls,omitempty"`
	// Final marks the final answer; Answer is its value as JSON (the text,
	// or the value under an output schema).
	Final  bool            `json:"final,omitempty"`
	Answer json.RawMessage `json:"answer,omitempty"`
	// Context is what the turn's request left out of the conversation to
	// fit the agent's context budget, when it compacted it; a resume sends
	// the same (a summary is never asked for again).
	Context *TurnContext `json:"context,omitempty"`
	// Guard are the output guardrails with on_trip: ask that the final
	// answer tripped: the answer is accepted once a person approves each
	// (the approval of step <step>/turn<n>/guardrail/<name>).
	Guard []TurnGuard `json:"guard,omitempty"`
}

// TurnGuard is a guardrail trip that waits for a person: the guardrail's
// name, its side (output) and why it tripped, in the guardrail's words.
type TurnGuard struct {
	Name   string `json:"name"`
	Side   string `json:"side"`
	Reason string `json:"reason"`
}

// TurnContext is a turn's compaction: the strategy (trim, summarize), how
// many messages of the conversation it left out, the summary that took
// their place (summarize), and the request's estimated tokens.
type TurnContext struct {
	Strategy string `json:"strategy"`
	Dropped  int    `json:"dropped"`
	Summary  string `json:"summary,omitempty"`
	Tokens   int    `json:"tokens"`
}

// appendTurn appends t's JSON, as encoding/json writes it (HTML left
// unescaped); an answer that is not JSON is written as null rather than
// losing the event.
func appendTurn(dst []byte, t *Turn) []byte {
	b := bytes.NewBuffer(dst)
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(t); err != nil {
		tt := *t
		tt.Answer, tt.Calls = nil, nil
		for _, c := range t.Calls {
			cc := c
			cc.Output, cc.Gate, cc.Agent = nil, nil, nil
			tt.Calls = append(tt.Calls, cc)
		}
		_ = enc.Encode(&tt)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// dropEmpty makes t's empty lists nil, as its encoding reads back.
func (t *Turn) dropEmpty() {
	if len(t.Calls) == 0 {
		t.Calls = nil
	}
	if len(t.Guard) == 0 {
		t.Guard = nil
	}
	for i := range t.Calls {
		t.Calls[i].dropEmpty()
	}
}

// redact hides the secrets red knows in t's text, answer, summary and calls (see
// Call.redact); its recorder made t for this event.
func (t *Turn) redact(red *redact.Redactor) {
	t.Text, t.Answer = red.String(t.Text), red.Bytes(t.Answer)
	if c := t.Context; c != nil && c.Summary != "" {
		cc := *c
		cc.Summary = red.String(c.Summary)
		t.Context = &cc
	}
	for i := range t.Calls {
		t.Calls[i].redact(red)
	}
	if len(t.Guard) > 0 {
		g := make([]TurnGuard, len(t.Guard))
		for i, x := range t.Guard {
			g[i] = x
			g[i].Reason = red.String(x.Reason)
		}
		t.Guard = g
	}
}
