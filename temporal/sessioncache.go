package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/reinhq/rein/internal/agent"
)

// errNoSession is the ApplicationError type of a unit whose worker could
// not get its session (session.go): the unit did not start, so the
// workflow runs it again as one that never ran (failureOf: notRun), on
// any worker, at most lostReruns times; after that the step fails
// transient, for its on_error. A unit never runs on a session whose
// digest is not its input's.
const errNoSession = "no_session"

// sessionQueryTimeout bounds the wait for the workflow's answer (no
// worker may be serving its task queue): a unit not answered in time
// fails errNoSession.
const sessionQueryTimeout = time.Minute

// defaultSessionBytes bounds the sessions a worker keeps when
// Activities.SessionBytes is zero.
const defaultSessionBytes = 64 << 20

// sessionKey names a kept session: the run's workflow id (the same across
// continue-as-new), the agent step's index and its attempt.
type sessionKey struct {
	workflow      string
	step, attempt int
}

// sessionCache keeps the sessions a worker's agent units left, as JSON
// (so that every reader decodes a copy of its own), least recently used
// first out once they pass max bytes.
type sessionCache struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[sessionKey, []byte]
	bytes int64
}

// get is a copy of the session kept under k.
func (c *sessionCache) get(k sessionKey) (*agentSession, bool) {
	c.mu.Lock()
	raw, ok := []byte(nil), false
	if c.lru != nil {
		raw, ok = c.lru.Get(k)
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	var s agentSession
	if json.Unmarshal(raw, &s) != nil {
		return nil, false
	}
	return &s, true
}

// put keeps s under k, within max bytes (max < 0: nothing is kept).
func (c *sessionCache) put(k sessionKey, s *agentSession, max int64) {
	if max == 0 {
		max = defaultSessionBytes
	}
	raw, err := json.Marshal(s)
	if err != nil || max < 0 || int64(len(raw)) > max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru == nil {
		// the bound is bytes, not entries (onEvict keeps the count).
		c.lru, _ = simplelru.NewLRU[sessionKey, []byte](1<<30, func(_ sessionKey, v []byte) { c.bytes -= int64(len(v)) })
	}
	if old, ok := c.lru.Peek(k); ok {
		c.bytes -= int64(len(old))
	}
	c.lru.Add(k, raw)
	c.bytes += int64(len(raw))
	for c.bytes > max {
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			break
		}
	}
}

// join is the whole session of unit input ai whose omitted part s holds:
// s's first ai.Since turns and the decisions on them, then ai's; false
// when s does not hold the part ai's digest names.
func (s *agentSession) join(ai *agentIn) ([]agent.Turn, map[string]agent.Decision, bool) {
	if len(s.Turns) < ai.Since {
		return nil, nil, false
	}
	prefix, _ := splitDecisions(s.Decisions, ai.Since)
	if sessionDigest(s.Turns[:ai.Since], prefix) != ai.Digest {
		return nil, nil, false
	}
	turns := append(s.Turns[:ai.Since:ai.Since], ai.Turns...)
	decisions := prefix
	for ref, d := range ai.Decisions {
		if decisions == nil {
			decisions = map[string]agent.Decision{}
		}
		decisions[ref] = d
	}
	return turns, decisions, true
}

// sessionOf is the whole session of the agent unit in: in's own when it
// carries it whole; else joined from the session this worker kept, or,
// when it kept none that fits, from the one the run's workflow answers
// (QueryAgentSession). It fails errNoSession when neither fits.
func (a *Activities) sessionOf(ctx context.Context, in *attemptIn) ([]agent.Turn, map[string]agent.Decision, error) {
	ai := in.Agent
	if ai.Since == 0 {
		return ai.Turns, ai.Decisions, nil
	}
	k := a.sessionKey(ctx, in)
	if s, ok := a.sessions.get(k); ok {
		if turns, ds, ok := s.join(ai); ok {
			return turns, ds, nil
		}
	}
	s, err := a.askSession(ctx, in)
	if err != nil {
		return nil, nil, temporal.NewApplicationError(fmt.Sprintf("agent step %d: the session is not kept here and the workflow did not answer it (query %s): %v", in.Step, QueryAgentSession, err), errNoSession)
	}
	turns, ds, ok := s.join(ai)
	if !ok {
		return nil, nil, temporal.NewApplicationError(fmt.Sprintf("agent step %d: the session the workflow answered (%d turns) is not the one the unit was given (%d turns before its own, digest %s)", in.Step, len(s.Turns), ai.Since, ai.Digest), errNoSession)
	}
	return turns, ds, nil
}

// keepSession keeps the session unit in left: turns is its whole session
// before the unit, out the unit's answer.
func (a *Activities) keepSession(ctx context.Context, in *attemptIn, turns []agent.Turn, ds map[string]agent.Decision, out *agentOut) {
	after := append(turns[:out.From:out.From], out.Turns...)
	a.sessions.put(a.sessionKey(ctx, in), &agentSession{Attempt: in.Attempt, Turns: after, Decisions: ds}, a.SessionBytes)
}

func (a *Activities) sessionKey(ctx context.Context, in *attemptIn) sessionKey {
	return sessionKey{workflow: activity.GetInfo(ctx).WorkflowExecution.ID, step: in.Step, attempt: in.Attempt}
}

// askSession asks the workflow that scheduled the unit for its session.
func (a *Activities) askSession(ctx context.Context, in *attemptIn) (*agentSession, error) {
	we := activity.GetInfo(ctx).WorkflowExecution
	if a.querySession != nil {
		return a.querySession(ctx, we.ID, we.RunID, in.Step, in.Attempt)
	}
	cl := a.Client
	if cl == nil {
		cl = activity.GetClient(ctx) // the worker's own client
	}
	if cl == nil {
		return nil, fmt.Errorf("this worker has no client to ask it with (temporal.Activities.Client)")
	}
	qctx, cancel := context.WithTimeout(ctx, sessionQueryTimeout)
	defer cancel()
	v, err := cl.QueryWorkflow(qctx, we.ID, we.RunID, QueryAgentSession, in.Step, in.Attempt)
	if err != nil {
		return nil, err
	}
	var s agentSession
	if err := v.Get(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

// agentError is an agent unit's error for the workflow: an errNoSession
// as it is (the unit did not start), any other toApplicationError's.
func agentError(err error, out *attemptOut) error {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.Type() == errNoSession {
		return err
	}
	return toAttemptError(err, out)
}
