package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// The history budget of a chat session: each new message's run gets the
// session's latest exchanges, oldest first, at most historyMessages
// messages and historyBytes bytes of content; an older exchange that does
// not fit is left out whole.
const (
	historyMessages = 20
	historyBytes    = 16 << 10
)

type chatFlags struct {
	agentFlags
	session, message string
}

func newChatCmd(s *streams) *cobra.Command {
	f := &chatFlags{agentFlags: agentFlags{jsonLines: true}}
	cmd := &cobra.Command{
		Use:   "chat DIR --session ID",
		Short: "Hold a multi-turn conversation with an agent, kept in the store",
		Long: `Talk to the agent of DIR (an agent folder, as rein agent): each message is one
agent run, recorded with --session ID, and sees the session's earlier exchanges
(the user message and the answer of each earlier run of this agent with that
session, oldest first, the latest 20 messages within 16 KiB). A second rein
chat with the same --session and --db continues the conversation.

Messages are read from stdin, one per line, until EOF (with a prompt on a
terminal); --message TEXT sends one message instead. Each answer is printed
as rein agent prints it; --output json prints the one rein agent --output json
object per answer, each on one line (JSON Lines).

A message whose run waits for a person stops the chat with what it waits on
(exit 3); once rein runs approve RUN STEP has finished that run, the next
rein chat of the session sees its answer. Exit codes as rein agent.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return f.chat(cmd, s, args[0]) },
	}
	f.register(cmd)
	f.registerCassettes(cmd)
	f.db.register(cmd)
	cmd.Flags().StringVar(&f.session, "session", "", "the session id whose conversation this continues (required)")
	cmd.Flags().StringVarP(&f.message, "message", "m", "", "send this one message instead of reading stdin")
	cmd.Flags().StringVar(&f.tracePath, "trace", "", "write the runs' events to this JSONL file")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "result format: text or json (one object per answer)")
	return cmd
}

func (f *chatFlags) chat(cmd *cobra.Command, s *streams, dir string) error {
	if err := checkFormat("--output", f.output); err != nil {
		return err
	}
	if strings.TrimSpace(f.session) == "" {
		return usageErr("--session is required: name the conversation (e.g. --session ticket-42) so a later rein chat can continue it")
	}
	if cmd.Flags().Changed("message") && strings.TrimSpace(f.message) == "" {
		return usageErr("--message is empty: say what the agent should do")
	}
	ctx := cmd.Context()
	st, dsn, err := f.db.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore(s, st)
	p, err := f.load(s, dir, st)
	if err != nil {
		return err
	}
	defer closeProject(s, p)
	send := func(msg string) (bool, error) {
		history, waiting, err := sessionHistory(ctx, st, f.session, p.Flow.Name)
		if err != nil {
			return false, err
		}
		if waiting != nil {
			pending, err := st.Approvals(ctx, &store.ListApprovalsParams{RunID: waiting.ID, Status: store.ApprovalPending})
			if err != nil {
				return false, err
			}
			fmt.Fprintf(s.out, "session %s: run %s is %s; the conversation goes on once it finishes\n", f.session, waiting.ID, waiting.Status)
			writePending(s.out, waiting.ID, dsn, pending, nil)
			return false, &exitError{code: exitWaiting}
		}
		in := map[string]any{"task": msg}
		if len(history) > 0 {
			in["history"] = history
		}
		res, err := f.ask(ctx, s, p, st, dsn, in, &engine.RunOptions{Session: f.session})
		if err != nil {
			return false, err
		}
		if code := exitCode(ctx, res); code != exitOK {
			return false, &exitError{code: code}
		}
		return true, nil
	}
	if f.message != "" {
		_, err := send(f.message)
		return err
	}
	prompt := false
	if file, ok := s.rawIn.(*os.File); ok && term.IsTerminal(int(file.Fd())) {
		prompt = true
	}
	sc := bufio.NewScanner(s.in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		if prompt {
			fmt.Fprint(s.term, "> ")
		}
		if !sc.Scan() {
			break
		}
		msg := strings.TrimSpace(sc.Text())
		if msg == "" {
			continue
		}
		if ok, err := send(msg); !ok {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return usageErr("reading messages from stdin: %v (one message a line, at most 1 MiB)", err)
	}
	return nil
}

// historyEntry is one message of a session's earlier conversation, as the
// agent flow's input "history" holds it.
type historyEntry struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// sessionHistory returns the earlier exchanges of session with the flow
// named flowName, oldest first, within the history budget: each succeeded
// run's task and answer. waiting is the session's newest run when it has
// not finished (a new message would talk past it).
func sessionHistory(ctx context.Context, st store.Store, session, flowName string) (history []historyEntry, waiting *store.Run, err error) {
	runs, err := st.ListRuns(ctx, &store.ListRunsParams{Session: session, Flow: flowName, Limit: historyMessages})
	if err != nil {
		return nil, nil, err
	}
	if len(runs) > 0 && !runs[0].Finished() {
		return nil, runs[0], nil
	}
	size := 0
	var rev []historyEntry // newest first
	for _, r := range runs {
		if r.Status != trace.RunSucceeded {
			continue
		}
		var in struct {
			Task string `json:"task"`
		}
		if err := json.Unmarshal(r.Input, &in); err != nil || in.Task == "" {
			continue
		}
		answer, err := runAnswer(ctx, st, r.ID)
		if err != nil {
			return nil, nil, err
		}
		if len(rev)+2 > historyMessages || size+len(in.Task)+len(answer) > historyBytes {
			break
		}
		size += len(in.Task) + len(answer)
		rev = append(rev, historyEntry{"assistant", answer}, historyEntry{"user", in.Task})
	}
	for i := len(rev) - 1; i >= 0; i-- {
		history = append(history, rev[i])
	}
	return history, nil, nil
}

// runAnswer is the agent step's output of run id: a string answer as
// itself, a structured one as JSON.
func runAnswer(ctx context.Context, st store.Store, id string) (string, error) {
	steps, err := st.Steps(ctx, id)
	if err != nil {
		return "", err
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
