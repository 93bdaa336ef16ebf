package temporal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/internal/agent"
)

// An agent's session goes to its units by reference. A unit's input
// (agentIn) carries only its last turn and the decisions on it: Since
// counts the turns it omits, and Digest is the digest of those turns and
// of the decisions on them (sessionDigest). The worker takes the omitted
// part from the sessions it keeps (sessionCache), and when it has not got
// them, or not those (another worker made the last unit, it restarted),
// asks the run's workflow (the query QueryAgentSession), and uses the
// answer only when its digest is Digest. So a unit's input no longer
// grows with the session, and the history grows with the turns, not with
// their square.
//
// The turns before the last never change once the workflow holds them
// (a unit answers from its input's last turn on: agentOut.From), so the
// prefix a digest names is the one the workflow holds for as long as the
// attempt lasts.

// QueryAgentSession answers an agent step's whole session (its turns and
// the decisions on its calls) at an attempt; its arguments are the step's
// index and the attempt (0: whichever attempt the workflow holds). A
// worker asks it for a unit whose session it has not kept; rein agent
// --temporal, to print each call as it settles (AgentSessionNow).
const QueryAgentSession = "agent-session"

// changeAgentSession: an agent unit's input carries its session by
// reference (Since, Digest) rather than whole. A history recorded before
// it gives each unit the whole session, as it did.
const changeAgentSession = "rein-agent-session"

// agentSession is QueryAgentSession's answer.
type agentSession struct {
	Attempt   int                       `json:"attempt"`
	Turns     []agent.Turn              `json:"turns,omitempty"`
	Decisions map[string]agent.Decision `json:"decisions,omitempty"`
}

// agentSessionQuery answers QueryAgentSession for step i at attempt (0:
// the latest): the session the workflow holds, or an error when it holds
// none at that attempt (the step moved on, or has not started).
func (r *wrun) agentSessionQuery(i, attempt int) (*agentSession, error) {
	a := r.agents[i]
	if a == nil || attempt != 0 && a.attempt != attempt {
		return nil, fmt.Errorf("no session of step %d at attempt %d", i, attempt)
	}
	return &agentSession{Attempt: a.attempt, Turns: a.turns, Decisions: a.decisions}, nil
}

// agentSessionQueries registers QueryAgentSession.
func (r *wrun) agentSessionQueries(ctx workflow.Context) error {
	return workflow.SetQueryHandler(ctx, QueryAgentSession, r.agentSessionQuery)
}

// agentInput is the input of a unit u of session a: by reference (its
// last turn, the decisions on it, the digest of the rest) once the run
// took changeAgentSession, else whole.
func (r *wrun) agentInput(ctx workflow.Context, a *agentRun, u agent.Unit) *agentIn {
	in := &agentIn{Turns: a.turns, Decisions: a.decisions, Started: a.started, Unit: u}
	if version(ctx, changeAgentSession) == workflow.DefaultVersion {
		return in
	}
	since := max(len(a.turns)-1, 0)
	if since == 0 {
		return in
	}
	prefix, rest := splitDecisions(a.decisions, since)
	in.Since, in.Turns, in.Decisions = since, a.turns[since:], rest
	in.Digest = sessionDigest(a.turns[:since], prefix)
	return in
}

// sessionDigest names a session's first turns and the decisions on them:
// the sha256 of their JSON (maps' keys sorted), as both the workflow and
// a worker hold them after a JSON round trip.
func sessionDigest(turns []agent.Turn, decisions map[string]agent.Decision) string {
	if turns == nil {
		turns = []agent.Turn{}
	}
	if decisions == nil {
		decisions = map[string]agent.Decision{}
	}
	raw, err := json.Marshal(struct {
		Turns     []agent.Turn              `json:"turns"`
		Decisions map[string]agent.Decision `json:"decisions"`
	}{turns, decisions})
	if err != nil {
		// a session decoded from JSON encodes again; this names the
		// unencodable, and matches no digest.
		return "unencodable: " + err.Error()
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// splitDecisions parts ds into the decisions on the first since turns
// (refs turn<t>/… with t ≤ since) and the rest (later turns, and a ref
// that names no turn, which always travels).
func splitDecisions(ds map[string]agent.Decision, since int) (prefix, rest map[string]agent.Decision) {
	for ref, d := range ds {
		if t, ok := refTurn(ref); ok && t <= since {
			if prefix == nil {
				prefix = map[string]agent.Decision{}
			}
			prefix[ref] = d
			continue
		}
		if rest == nil {
			rest = map[string]agent.Decision{}
		}
		rest[ref] = d
	}
	return prefix, rest
}

// refTurn is the turn a call's ref names (turn<t>/call<c>: t).
func refTurn(ref string) (int, bool) {
	s, ok := strings.CutPrefix(ref, "turn")
	if !ok {
		return 0, false
	}
	if k := strings.IndexByte(s, '/'); k >= 0 {
		s = s[:k]
	}
	t, err := strconv.Atoi(s)
	return t, err == nil && t > 0
}
