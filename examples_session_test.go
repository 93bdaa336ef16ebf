package rein_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/trace"
)

// TestExampleSupportChat is examples/support-chat: the follow-up is
// answered from the first message's tool result (its script answers it
// only when that observation is in the request), and the third message,
// over context.max_tokens, is sent with the model's summary of the older
// exchanges, journaled with its turn.
func TestExampleSupportChat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := rein.Open(ctx, rein.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Load("examples/support-chat")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	svc, err := session.New(c, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var replies []*session.Reply
	for _, msg := range []string{"Was I charged twice for order 1042?", "Which charge was the duplicate?", "Please refund the duplicate."} {
		rep, err := svc.Ask(ctx, "t-1042", msg)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Result.Status != trace.RunSucceeded {
			t.Fatalf("%q: run %s is %s: %v", msg, rep.Result.RunID, rep.Result.Status, rep.Result.Error)
		}
		replies = append(replies, rep)
	}
	if a, _ := replies[1].Answer.(string); !strings.HasPrefix(a, "The duplicate is ch_2") {
		t.Errorf("the follow-up's answer %q", a)
	}
	for i, rep := range replies[:2] {
		for _, tr := range rep.Turns {
			if tr.Context != nil {
				t.Errorf("message %d compacted its conversation (%+v): the example's first two fit the budget", i+1, tr.Context)
			}
		}
	}
	ctxOf := replies[2].Turns[0].Context
	if ctxOf == nil || ctxOf.Strategy != "summarize" || !strings.Contains(ctxOf.Summary, "ch_2 is the duplicate") || ctxOf.Tokens > 175 {
		t.Fatalf("message 3's turn 1 context %+v: want the journaled summary, within 175 tokens", ctxOf)
	}
	if u := replies[2].Usage; u.LLMCalls != 2 {
		t.Errorf("message 3's usage %+v: want 2 model calls (the summary and the answer)", u)
	}

	// a card number in a message trips the input guardrail before any
	// model call: the run fails with a guardrail error, the session goes on.
	rep, err := svc.Ask(ctx, "t-1042", "My card is 4111 1111 1111 1111, refund it there.")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Result.Status != trace.RunFailed || fault.ClassOf(rep.Result.Error) != fault.Guardrail ||
		!strings.Contains(rep.Result.Error.Error(), "input guardrail no_card_numbers tripped") || len(rep.Turns) != 0 {
		t.Errorf("the card number's run: %s, %v (class %s), %d turns; want failed by guardrail no_card_numbers before any turn",
			rep.Result.Status, rep.Result.Error, fault.ClassOf(rep.Result.Error), len(rep.Turns))
	}
}
