package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/session"
)

type chatFlags struct {
	agentFlags
	session, message string
}

func newChatCmd(s *streams) *cobra.Command {
	f := &chatFlags{agentFlags: agentFlags{jsonLines: true, chat: true}}
	cmd := &cobra.Command{
		Use:   "chat DIR --session ID",
		Short: "Hold a multi-turn conversation with an agent, kept in the store",
		Long: `Talk to the agent of DIR (an agent folder, as rein agent): each message is one
agent run, recorded with --session ID, and sees the session's earlier exchanges
(the user message and the answer of each earlier run of this agent with that
session, oldest first, the latest 20 messages within 16 KiB). A second rein
chat with the same --session and --db continues the conversation.

With a team of agents, the next message goes to the agent that answered
last (after a handoff: transfer_to_NAME), which may hand the conversation
back; the prompt names it ("refunds> ") and --output json's answered_by.

Messages are read from stdin, one per line, until EOF (with a prompt on a
terminal); --message TEXT sends one message instead. Each answer is printed
once, as the model writes it, and each tool call as one line when it settles
(no run report); --output json prints the one rein agent --output json
object per answer, each on one line (JSON Lines).

A message whose run waits for a person stops the chat with what it waits on
(exit 3); once rein runs approve RUN STEP has finished that run, the next
rein chat of the session sees its answer. The lines still to come are not
sent: each is named on stderr ("not sent: ...") with why, to send again
once the run has finished. A run that fails stops the chat the same way.
Exit codes as rein agent.`,
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
	st, dsn, p, err := f.open(ctx, s, dir)
	if err != nil {
		return err
	}
	defer closeStore(s, st)
	defer closeProject(s, p)
	svc, err := newSession(ctx, st, p)
	if err != nil {
		return err
	}
	// stopped says why the chat takes no more messages once send failed.
	var stopped string
	// last names the agent the next message goes to (session.AnsweredBy),
	// shown in the prompt.
	var last []string
	send := func(msg string) (bool, error) {
		res, rep, err := f.ask(ctx, s, svc, p, st, dsn, f.session, msg)
		if rep != nil {
			last = rep.AnsweredBy
		}
		var waiting *session.WaitingError
		if errors.As(err, &waiting) {
			fmt.Fprintln(s.out, waiting.Error())
			writePending(s.out, waiting.Run.ID, dsn, waiting.Pending, nil)
			stopped = fmt.Sprintf("run %s of session %s is %s", waiting.Run.ID, f.session, waiting.Run.Status)
			return false, &exitError{code: exitWaiting}
		}
		if err != nil {
			stopped = "the message before it failed"
			return false, err
		}
		if code := exitCode(ctx, res); code != exitOK {
			stopped = fmt.Sprintf("run %s of session %s is %s", res.RunID, f.session, res.Status)
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
		if last, err = svc.LastAgent(ctx, f.session); err != nil {
			last = nil // a waiting run: the first message says so
		}
	}
	sc := bufio.NewScanner(s.in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		if prompt {
			fmt.Fprint(s.term, chatPrompt(last))
		}
		if !sc.Scan() {
			break
		}
		msg := strings.TrimSpace(sc.Text())
		if msg == "" {
			continue
		}
		if ok, err := send(msg); !ok {
			refuseRest(s, sc, f.session, stopped)
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return usageErr("reading messages from stdin: %v (one message a line, at most 1 MiB)", err)
	}
	return nil
}

// refuseRest reads the lines of sc left after the chat stopped (why) and
// says, on stderr, each one it did not send: a conversation does not go on
// past a run that waits for a person or failed, and no line is dropped
// without a word.
func refuseRest(s *streams, sc *bufio.Scanner, sessionID, why string) {
	n := 0
	for sc.Scan() {
		msg := strings.TrimSpace(sc.Text())
		if msg == "" {
			continue
		}
		n++
		fmt.Fprintf(s.err, "rein chat: not sent: %q: %s\n", runs.Clip(msg, 80), why)
	}
	if n > 0 {
		fmt.Fprintf(s.err, "rein chat: %d message(s) not sent; send them again with rein chat --session %s once the session takes messages (a waiting run: once rein runs approve/reject has finished it)\n", n, printable(sessionID))
	}
}

// chatPrompt is the prompt of rein chat on a terminal: the agent the next
// message goes to when the conversation was handed over to it
// ("shipping> "), else "> ".
func chatPrompt(last []string) string {
	if len(last) == 0 {
		return "> "
	}
	return printable(last[len(last)-1]) + "> "
}
