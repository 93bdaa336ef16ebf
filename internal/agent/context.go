package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
)

// The strategies of a context budget (ContextBudget.Strategy).
const (
	// StrategyTrim leaves the oldest messages out, by a deterministic rule.
	StrategyTrim = "trim"
	// StrategySummarize replaces them with a model's summary of them.
	StrategySummarize = "summarize"
)

// DefaultSummaryPrompt is the system message of a summary request when
// ContextBudget.Prompt is empty.
const DefaultSummaryPrompt = "Summarize the earlier part of this conversation for the assistant that continues it. " +
	"Keep every fact, name, number and id a later question may need, tool results included. At most 200 words, no preamble."

// ContextBudget bounds what one request of the loop sends: no request
// estimates (model.EstimateTokens) more than MaxTokens. When the
// conversation would, the oldest messages are compacted before the turn's
// model call:
//
//   - the instructions, the task and the latest turn (a reply and its
//     calls' observations) are always kept; the others go oldest first,
//     whole groups at a time — a user message, or an assistant message
//     with the observations of its calls, so a tool call is never sent
//     without its observation nor an observation without its call;
//   - StrategyTrim leaves them out;
//   - StrategySummarize leaves out enough to fit three quarters of the
//     budget and asks the model (an isolated request, Decision
//     "summarize", system message Prompt) to summarize them with the
//     earlier summary; the summary joins the instructions.
//
// The turn records what was done (Turn.Context), journaled with it: a
// resumed loop sends the same requests, with the journaled summary, and
// never asks for it again. When even the smallest request does not fit,
// the loop stops with a budget error ("context").
type ContextBudget struct {
	MaxTokens int
	Strategy  string
	Prompt    string
}

// Compaction is what a turn's request left out of the conversation
// (Turn.Context): the Dropped messages after the instructions (the task
// among them is sent all the same) and, under StrategySummarize, the
// Summary of them that is sent instead; Tokens is the request's estimate
// once compacted. It holds for the later turns too, until one compacts
// further.
type Compaction struct {
	Strategy string `json:"strategy"`
	Dropped  int    `json:"dropped"`
	Summary  string `json:"summary,omitempty"`
	Tokens   int    `json:"tokens"`
}

// summaryHead introduces the summary in the system message.
const summaryHead = "Summary of the earlier conversation:\n"

// fit returns the messages turn t sends: msgs (the whole conversation,
// as conversation.extend builds it) as the latest compaction of s left
// them, compacted further (t.Context, t.Usage, t.LLMCalls) when the
// request would pass the context budget. Errors: a budget error
// ("context") when it cannot fit, the summary request's model error.
func (l *Loop) fit(ctx context.Context, s *Session, t *Turn, msgs []model.Message) ([]model.Message, error) {
	cb := l.cfg.Context
	if cb == nil || cb.MaxTokens <= 0 {
		return msgs, nil
	}
	head := 0
	if l.cfg.Instructions != "" {
		head = 1
	}
	task := head + len(s.History)
	var prev Compaction
	for i := len(s.Turns) - 1; i >= 0; i-- {
		if c := s.Turns[i].Context; c != nil {
			prev = *c
			break
		}
	}
	// the latest group: the start of the last user or assistant message
	last := len(msgs) - 1
	for last > head && msgs[last].Role == model.Tool {
		last--
	}
	est := func(start int, summary string) ([]model.Message, int) {
		out := compacted(msgs, head, task, start, summary, l.cfg.Instructions)
		return out, model.EstimateTokens(&model.Request{Messages: out, Tools: l.defs})
	}
	start := head + prev.Dropped
	out, n := est(start, prev.Summary)
	if n <= cb.MaxTokens {
		return out, nil
	}
	target := cb.MaxTokens
	if cb.Strategy == StrategySummarize {
		target = cb.MaxTokens * 3 / 4
	}
	for n > target {
		next := start + 1
		for next < len(msgs) && msgs[next].Role == model.Tool {
			next++ // a call's observations go with it
		}
		if next > last {
			break
		}
		start = next
		out, n = est(start, prev.Summary)
	}
	summary := ""
	if cb.Strategy == StrategySummarize && start > head+prev.Dropped {
		var err error
		if summary, err = l.summarize(ctx, t, prev.Summary, msgs[head+prev.Dropped:start], task-head-prev.Dropped); err != nil {
			return nil, err
		}
		out, n = est(start, summary)
	}
	if n > cb.MaxTokens {
		return nil, fault.BudgetErr("context", "agent: turn %d: the request needs about %d tokens, over the context budget (context.max_tokens: %d), even with everything but the instructions, the task and the latest turn left out; raise max_tokens or lower max_observation_bytes", t.N, n, cb.MaxTokens)
	}
	if start == head+prev.Dropped {
		return out, nil // as before: nothing more to record
	}
	t.Context = &Compaction{Strategy: cb.Strategy, Dropped: start - head, Summary: summary, Tokens: n}
	return out, nil
}

// compacted is msgs with the messages from head up to start left out (the
// task at index task sent all the same) and summary, when set, appended
// to the instructions.
func compacted(msgs []model.Message, head, task, start int, summary, instructions string) []model.Message {
	if start <= head && summary == "" {
		return msgs
	}
	out := make([]model.Message, 0, len(msgs)-start+head+2)
	if summary != "" {
		out = append(out, model.Message{Role: model.System, Content: strings.TrimSpace(instructions + "\n\n" + summaryHead + summary)})
	} else {
		out = append(out, msgs[:head]...)
	}
	if task < start {
		out = append(out, msgs[task])
	}
	return append(out, msgs[start:]...)
}

// summarize asks the model to summarize dropped (with the earlier
// summary, prev), leaving out the message at index skip (the task, sent
// anyway); its model call counts in t.
func (l *Loop) summarize(ctx context.Context, t *Turn, prev string, dropped []model.Message, skip int) (string, error) {
	var b strings.Builder
	if prev != "" {
		b.WriteString(summaryHead + prev + "\n\n")
	}
	for i := range dropped {
		if i == skip {
			continue
		}
		m := &dropped[i]
		switch {
		case m.Role == model.Tool:
			fmt.Fprintf(&b, "tool result (%s): %s\n", m.ToolCallID, m.Content)
		case len(m.ToolCalls) > 0:
			if m.Content != "" {
				fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Content)
			}
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&b, "%s called %s (%s) with %s\n", m.Role, c.Name, c.ID, c.Args)
			}
		default:
			fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Content)
		}
	}
	prompt := l.cfg.Context.Prompt
	if prompt == "" {
		prompt = DefaultSummaryPrompt
	}
	req := &model.Request{Model: l.cfg.ModelName, Decision: "summarize", Turn: t.N,
		RunID: l.cfg.RunID, StepID: l.cfg.StepID, Attempt: l.cfg.Attempt,
		Messages: []model.Message{{Role: model.System, Content: prompt}, {Role: model.User, Content: b.String()}}}
	resp, err := l.generate(ctx, req, t)
	if err != nil {
		return "", &ModelError{Turn: t.N, Model: l.cfg.ModelName, Err: fmt.Errorf("summary of the earlier conversation (context.strategy: summarize): %w", err)}
	}
	if resp == nil || strings.TrimSpace(resp.Text) == "" {
		return "", fault.BusinessErr(fmt.Errorf("agent: turn %d: model %s answered the summary request (context.strategy: summarize) with no text", t.N, l.cfg.ModelName))
	}
	return strings.TrimSpace(resp.Text), nil
}
