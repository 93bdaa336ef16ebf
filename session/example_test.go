package session_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
)

// ExampleService_Ask holds a conversation with the notes agent of
// sessiontest/testdata/notes (answered by its script.yaml): the second
// message sees the first, its call waits for a person, the session takes
// no message until a person approves, and then the next one sees the
// answer.
func ExampleService_Ask() {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, ":memory:", nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()
	save := tool.Func(tool.Spec{Name: "save_note", Effect: tool.EffectWrite},
		func(context.Context, any) (any, error) { return map[string]any{"saved": true}, nil })
	charges := tool.Func(tool.Spec{Name: "find_charges", Effect: tool.EffectRead},
		func(context.Context, any) (any, error) { return map[string]any{"charge": "ch_981"}, nil })
	c, err := rein.Open(ctx, rein.Config{Store: st, Load: &project.LoadOptions{Tools: []tool.Tool{save, charges}}})
	if err != nil {
		panic(err)
	}
	p, err := c.Load("sessiontest/testdata/notes")
	if err != nil {
		panic(err)
	}
	defer p.Close()
	svc, err := session.New(c, p, nil) // the latest 20 messages within 16 KiB
	if err != nil {
		panic(err)
	}

	reply, err := svc.Ask(ctx, "ticket-42", "remember: the code is 4711")
	if err != nil {
		panic(err)
	}
	fmt.Println(reply.Result.Status, reply.Answer)
	reply, err = svc.Ask(ctx, "ticket-42", "write it down")
	if err != nil {
		panic(err)
	}
	fmt.Println(reply.Result.Status, reply.Result.Pending[0].StepID, reply.Turns[0].Calls[0].Tool)

	_, err = svc.Ask(ctx, "ticket-42", "is it saved?")
	var waiting *session.WaitingError
	fmt.Println(errors.As(err, &waiting) && waiting.Run.ID == reply.Result.RunID)

	out, err := c.Decide(ctx, reply.Result.RunID, waiting.Pending[0].StepID,
		rein.Decision{Status: store.ApprovalApproved, By: "ops"}, &rein.DecideOptions{Resume: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Result.Status)
	reply, err = svc.Ask(ctx, "ticket-42", "is it saved?")
	if err != nil {
		panic(err)
	}
	fmt.Println(reply.Answer, reply.Usage.Turns)
	// Output:
	// succeeded Noted: the code is 4711.
	// waiting agent/turn1/call1 save_note
	// true
	// succeeded
	// Yes: your note is saved. 1
}
