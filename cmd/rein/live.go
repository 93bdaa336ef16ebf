package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/trace"
)

// live is the trace sink that prints an agent run's conversation to
// stdout as it happens: the text of each turn as the model writes it
// (trace.DeltaSink: the engine streams the model calls for it), that of
// the agents the conversation is handed over to too, never that of an
// agent called as a tool (its answer is its caller's observation), and
// each tool call as one line once it settles ("  -> tool args -> status:
// observation"; a sub-agent's calls one line each under its call).
// Deltas come redacted by the engine, events as journaled.
type live struct {
	mu sync.Mutex
	w  io.Writer
	// mid is true when the last thing written did not end a line.
	mid bool
	// streamed holds the turns whose text reached the writer, by
	// streamKey.
	streamed map[string]bool
}

func newLive(w io.Writer) *live { return &live{w: w, streamed: map[string]bool{}} }

// streamKey names turn n of the sub-run subRun ("" for the step's own
// loop), as deltas and the transcript both name it.
func streamKey(subRun string, n int) string { return subRun + "#" + strconv.Itoa(n) }

var _ trace.DeltaSink = (*live)(nil)

// BorrowsEvents marks live as a trace.Borrower: it keeps nothing of an
// event.
func (*live) BorrowsEvents() {}

// EmitDelta prints the text of an agent turn as it comes.
func (l *live) EmitDelta(_ context.Context, d trace.Delta) {
	if d.Decision != "agent" || d.Aside {
		return // a flow's llm, route and plan calls are data, not the answer; an agent called as a tool answers its caller
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if d.Reset {
		l.endLine()
		fmt.Fprintln(l.w, "(the model's reply was cut off; asking again)")
		delete(l.streamed, streamKey(d.SubRun, d.Turn))
		return
	}
	if d.Text == "" {
		return
	}
	fmt.Fprint(l.w, d.Text)
	l.mid = d.Text[len(d.Text)-1] != '\n'
	l.streamed[streamKey(d.SubRun, d.Turn)] = true
}

// Emit prints an agent's tool call as one line once it settled or waits
// (its call record), and ends the line a turn's text left open.
func (l *live) Emit(_ context.Context, e *trace.Event) {
	if e.Kind != trace.AgentTurn && e.Kind != trace.CallRecorded && e.Kind != trace.AgentCall {
		return
	}
	var c session.Call
	if e.Kind != trace.AgentTurn {
		var ok bool
		var err error
		if c, _, ok, err = session.CallOf(e); !ok || err == nil && c.Status == session.StatusChosen {
			return // not an agent's call, or one not settled yet
		}
		if err != nil {
			c = session.Call{Tool: e.Tool, Status: session.CallStatus(e.Status)}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endLine()
	if e.Kind != trace.AgentTurn {
		runs.WriteLiveCall(l.w, "  ", &c)
	}
}

// endLine ends the line the streamed text left open.
func (l *live) endLine() {
	if l.mid {
		fmt.Fprintln(l.w)
		l.mid = false
	}
}

// finish ends the open line, and prints the answer of the run's final turn
// when none of its text was streamed (a model that does not stream), then
// what the run's answer adds after that text (a workflow tool's
// response_hook: append_result).
func (l *live) finish(turns []session.Turn, answer any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endLine()
	n := len(turns)
	if n == 0 || !turns[n-1].Final {
		return
	}
	text := turns[n-1].Text
	if !l.streamed[finalKey("", turns)] && text != "" {
		fmt.Fprintln(l.w, text)
	}
	if a, ok := answer.(string); ok && len(a) > len(text) && strings.HasPrefix(a, text) {
		fmt.Fprintln(l.w, strings.TrimPrefix(a[len(text):], "\n"))
	}
}

// finalKey is the streamKey of the turn that wrote the final answer of
// turns, a sub-run's (subRun) or the step's: the receiving agent's when
// the conversation was handed over (the final turn then makes no model
// call of its own).
func finalKey(subRun string, turns []session.Turn) string {
	n := len(turns)
	last := &turns[n-1]
	if last.LLMCalls == 0 && n > 1 {
		for i := range turns[n-2].Calls {
			c := &turns[n-2].Calls[i]
			if c.Sub != nil && c.Sub.Handoff && c.Sub.Status == session.SubAnswered && len(c.Sub.Turns) > 0 {
				return finalKey(c.Key+"/"+c.Tool, c.Sub.Turns)
			}
		}
	}
	return streamKey(subRun, last.N)
}
