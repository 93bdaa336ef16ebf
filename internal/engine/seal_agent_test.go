package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// An agent's transcript that holds a secret (a tool's observation) is
// rebuilt after a resume as the live run had it: the model's next turn is
// sent the secret, not [REDACTED].
func TestSealedAgentTranscriptAfterResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st := openSQLite(t)
	build := func() (*engine.Engine, *flow.Flow) {
		reg := &tool.Registry{}
		for _, from := range []struct {
			reg  *tool.Registry
			name string
		}{{sealTools(dir, false), "fetch"}, {agentTools(dir, ""), "refund"}} {
			tl, _ := from.reg.Lookup(from.name)
			if err := reg.Register(tl); err != nil {
				t.Fatal(err)
			}
		}
		replies := []model.Response{
			{ToolCalls: []model.ToolCall{call("a", "fetch", `{}`)}},
			{ToolCalls: []model.ToolCall{call("b", "refund", `{"order":"1042"}`)}},
			{Text: "done"},
		}
		models := &model.Registry{}
		models.Register("m", model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
			sent, _ := json.Marshal(req)
			f, err := os.OpenFile(filepath.Join(dir, "model.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(f, "turn%d:%v\n", req.Turn, bytes.Contains(sent, []byte(sealSecret)))
			f.Close()
			if req.Turn < 1 || req.Turn > len(replies) {
				return nil, fmt.Errorf("no reply for turn %d", req.Turn)
			}
			r := replies[req.Turn-1]
			return &r, nil
		}))
		f, err := flow.Parse([]byte(`name: sealed-agent
steps:
  - {id: support, type: agent, model: m, prompt_template: go, tools: {fetch: , refund: {approval: required}}}
`), "a.yaml", &flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
		if err != nil {
			t.Fatal(err)
		}
		return engine.New(engine.Config{Tools: reg, Models: models, Store: st, Redactor: redact.New(sealSecret),
			Codec: sealCodec(t, sealKey(t, "k1", 1))}), f
	}
	e, f := build()
	res, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: "agent-sealed"})
	if err != nil || res.Status != trace.RunWaiting || len(res.Pending) != 1 {
		t.Fatalf("run: %v %+v", err, res)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "agent-sealed", StepID: res.Pending[0].StepID, Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	e2, f2 := build() // another process
	if res, err = e2.Resume(ctx, f2, "agent-sealed"); err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("resume: %v %+v", err, res)
	}
	if got := strings.Join(readLines(t, filepath.Join(dir, "model.log")), " "); got != "turn1:false turn2:true turn3:true" {
		t.Fatalf("turns sent the secret: %s, want turn2 and turn3 (the resumed one) to", got)
	}
	storeHoldsNot(t, st, "agent-sealed", sealSecret)
}

// An agent turn's record (journal.Turn) is sealed whole where redaction
// changed it: a secret in the model's own text reaches the journal
// redacted, and the resumed run sends the model its turn as it was.
func TestSealedAgentTurnAfterResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st := openSQLite(t)
	build := func() (*engine.Engine, *flow.Flow) {
		reg := agentTools(dir, "")
		replies := []model.Response{
			{Text: "the key is " + sealSecret, ToolCalls: []model.ToolCall{call("b", "refund", `{"order":"1042"}`)}},
			{Text: "done"},
		}
		models := &model.Registry{}
		models.Register("m", model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
			sent, _ := json.Marshal(req)
			f, err := os.OpenFile(filepath.Join(dir, "model.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(f, "turn%d:%v\n", req.Turn, bytes.Contains(sent, []byte(sealSecret)))
			f.Close()
			if req.Turn < 1 || req.Turn > len(replies) {
				return nil, fmt.Errorf("no reply for turn %d", req.Turn)
			}
			r := replies[req.Turn-1]
			return &r, nil
		}))
		f, err := flow.Parse([]byte(`name: sealed-turn
steps:
  - {id: support, type: agent, model: m, prompt_template: go, tools: {refund: {approval: required}}}
`), "a.yaml", &flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
		if err != nil {
			t.Fatal(err)
		}
		return engine.New(engine.Config{Tools: reg, Models: models, Store: st, Redactor: redact.New(sealSecret),
			Codec: sealCodec(t, sealKey(t, "k1", 1))}), f
	}
	e, f := build()
	res, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: "turn-sealed"})
	if err != nil || res.Status != trace.RunWaiting || len(res.Pending) != 1 {
		t.Fatalf("run: %v %+v", err, res)
	}
	evs, err := st.Events(ctx, "turn-sealed", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	turns := 0
	for _, ev := range evs {
		if ev.Kind != trace.AgentTurn {
			continue
		}
		turns++
		if ev.AgentTurn == nil || ev.Data != "" {
			t.Fatalf("agent_turn event %d: record %+v, data %q; want the typed record only", ev.Seq, ev.AgentTurn, ev.Data)
		}
		if ev.AgentTurn.N != 1 || !strings.Contains(ev.AgentTurn.Text, "[REDACTED") || len(ev.AgentTurn.Calls) != 1 || ev.AgentTurn.Calls[0].Name != "refund" {
			t.Fatalf("agent_turn event %d holds %+v; want turn 1, its text redacted, its refund call", ev.Seq, ev.AgentTurn)
		}
	}
	if turns != 1 {
		t.Fatalf("%d agent_turn events before the approval, want 1", turns)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "turn-sealed", StepID: res.Pending[0].StepID, Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	e2, f2 := build() // another process
	if res, err = e2.Resume(ctx, f2, "turn-sealed"); err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("resume: %v %+v", err, res)
	}
	if got := strings.Join(readLines(t, filepath.Join(dir, "model.log")), " "); got != "turn1:false turn2:true" {
		t.Fatalf("turns sent the secret: %s, want the resumed turn 2 to (turn 1's text, unsealed)", got)
	}
	storeHoldsNot(t, st, "turn-sealed", sealSecret)
}
