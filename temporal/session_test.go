package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/project"
)

// approvalTurnsScript: a lookup, a refund that needs approval, two more
// lookups, then the answer; the decision on turn2/call1 is in the prefix
// the later units leave out.
const approvalTurnsScript = `replies:
  - {step: agent, decision: agent, turn: 1, tool_calls: [{name: lookup, args: {order: "1"}}]}
  - {step: agent, decision: agent, turn: 2, tool_calls: [{name: refund, args: {order: "1", amount: 5}}]}
  - {step: agent, decision: agent, turn: 3, tool_calls: [{name: lookup, args: {order: "2"}}]}
  - {step: agent, decision: agent, turn: 4, tool_calls: [{name: lookup, args: {order: "3"}}]}
  - {step: agent, decision: agent, turn: 5, raw: "refunded"}
`

// unitSeen is an agent unit as its worker got it.
type unitSeen struct {
	id    string
	in    agentIn
	bytes int // its agentIn's JSON
}

// sessionEnv runs p in the test environment on activities a, which ask
// the workflow for a session through the environment's query (counted in
// queries); before, when set, is called before each agent unit runs (k
// from 1). It returns the harness and the units seen.
type sessionEnv struct {
	h       *harness
	a       *Activities
	queries atomic.Int32
	mu      sync.Mutex
	units   []unitSeen
	before  func(k int, in *attemptIn)
}

func newSessionEnv(t *testing.T, p *project.Project, a *Activities) *sessionEnv {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := newTestEnv(&s)
	fs := NewFlows()
	fs.Add(p)
	a.Flows = fs
	RegisterWorkflow(env, &Workflow{Flows: fs})
	se := &sessionEnv{h: &harness{t: t, env: env, p: p}, a: a}
	env.RegisterDynamicActivity(func(ctx context.Context, args converter.EncodedValues) (*attemptOut, error) {
		var in attemptIn
		if err := args.Get(&in); err == nil && in.Agent != nil {
			raw, _ := json.Marshal(in.Agent)
			se.mu.Lock()
			se.units = append(se.units, unitSeen{id: activity.GetInfo(ctx).ActivityID, in: *in.Agent, bytes: len(raw)})
			k := len(se.units)
			se.mu.Unlock()
			if se.before != nil {
				se.before(k, &in)
			}
		}
		return a.Run(ctx, args)
	}, activity.DynamicRegisterOptions{})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "run-1"})
	a.querySession = func(_ context.Context, workflowID, _ string, step, attempt int) (*agentSession, error) {
		se.queries.Add(1)
		if workflowID != "run-1" {
			return nil, fmt.Errorf("asked workflow %q", workflowID)
		}
		v, err := env.QueryWorkflow(QueryAgentSession, step, attempt)
		if err != nil {
			return nil, err
		}
		var s agentSession
		return &s, v.Get(&s)
	}
	return se
}

// byReference counts the units given their session by reference, and
// fails t for one that carried more than its last turn.
func (se *sessionEnv) byReference(t *testing.T) int {
	t.Helper()
	n := 0
	for _, u := range se.units {
		if u.in.Since == 0 {
			continue
		}
		n++
		if len(u.in.Turns) != 1 || u.in.Digest == "" {
			t.Errorf("unit %s: since %d, %d turns, digest %q", u.id, u.in.Since, len(u.in.Turns), u.in.Digest)
		}
	}
	return n
}

// runApprovalAgent runs the approval script on se, approving the refund
// when the run waits, and checks the run's end and its calls.
func runApprovalAgent(t *testing.T, se *sessionEnv, l *ledger) {
	t.Helper()
	se.h.env.RegisterDelayedCallback(func() {
		se.h.update(Decision{Step: "agent/turn2/call1", Action: ActionApprove, By: "ana"})
	}, time.Minute)
	st := se.h.run(map[string]any{"task": "refund order 1"})
	if st.Status != "succeeded" || string(st.Outputs["agent"]) != `"refunded"` {
		t.Fatalf("run: %+v %+v, agent %s", st, st.Error, st.Outputs["agent"])
	}
	if got := l.keys("refund"); len(got) != 1 || got[0] != "run-1/agent/1/turn2/call1" {
		t.Errorf("refund calls %v", got)
	}
	if got := strings.Join(l.keys("lookup"), ","); got != "run-1/after/1,run-1/agent/1/turn1/call1,run-1/agent/1/turn3/call1,run-1/agent/1/turn4/call1" {
		t.Errorf("lookup calls %s", got)
	}
}

func approvalAgent(t *testing.T) (*project.Project, *ledger) {
	l := newLedger()
	return loadAgent(t, agentFlow, approvalTurnsScript, l.tool("lookup", true), l.tool("refund", false)), l
}

// TestAgentSessionCacheHit: on one worker, every unit after the session's
// first turns carries one turn and the digest of the rest, which the
// worker holds: it never asks the workflow, and the run ends as the same
// run with whole sessions (a history recorded before
// changeAgentSession) does.
func TestAgentSessionCacheHit(t *testing.T) {
	p, l := approvalAgent(t)
	se := newSessionEnv(t, p, &Activities{})
	runApprovalAgent(t, se, l)
	if n := se.byReference(t); n < 5 {
		t.Errorf("%d units by reference of %d", n, len(se.units))
	}
	if q := se.queries.Load(); q != 0 {
		t.Errorf("the worker asked the workflow %d times", q)
	}

	p, l = approvalAgent(t)
	old := newSessionEnv(t, p, &Activities{})
	old.h.env.OnGetVersion(changeAgentSession, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	runApprovalAgent(t, old, l)
	if n := old.byReference(t); n != 0 {
		t.Errorf("before the change, %d units went by reference", n)
	}
	if len(old.units) != len(se.units) {
		t.Fatalf("%d units, before the change %d", len(se.units), len(old.units))
	}
	last := len(se.units) - 1
	if se.units[last].bytes >= old.units[last].bytes {
		t.Errorf("the last unit's input: %d bytes, whole %d", se.units[last].bytes, old.units[last].bytes)
	}
}

// TestAgentSessionMiss: a worker that keeps no session asks the workflow
// for each unit's (QueryAgentSession), decisions on earlier turns
// included, and the run ends as on a worker that keeps them.
func TestAgentSessionMiss(t *testing.T) {
	p, l := approvalAgent(t)
	se := newSessionEnv(t, p, &Activities{SessionBytes: -1})
	runApprovalAgent(t, se, l)
	n := se.byReference(t)
	if q := int(se.queries.Load()); q != n || n < 5 {
		t.Errorf("asked the workflow %d times for %d units by reference", q, n)
	}
}

// TestAgentSessionDigestMismatch: the session the worker holds is not the
// one a unit's digest names (here: a turn of it altered, as when another
// worker made the last unit): the worker asks the workflow, and no unit
// runs on the altered session.
func TestAgentSessionDigestMismatch(t *testing.T) {
	p, l := approvalAgent(t)
	se := newSessionEnv(t, p, &Activities{})
	key := sessionKey{workflow: "run-1", step: 0, attempt: 1}
	se.before = func(_ int, _ *attemptIn) {
		if s, ok := se.a.sessions.get(key); ok && len(s.Turns) > 0 {
			s.Turns[0].Text = "altered"
			se.a.sessions.put(key, s, 0)
		}
	}
	runApprovalAgent(t, se, l)
	n := se.byReference(t)
	if q := int(se.queries.Load()); q != n || n < 5 {
		t.Errorf("asked the workflow %d times for %d units by reference", q, n)
	}
	// the last unit kept the session it ran on: the workflow's.
	if s, ok := se.a.sessions.get(key); !ok || len(s.Turns) != 5 || s.Turns[0].Text == "altered" {
		t.Errorf("kept session %+v (%v)", s, ok)
	}
}

// TestAgentSessionLatest: QueryAgentSession at attempt 0 answers the
// session the workflow holds at whichever attempt is current (what rein
// agent --temporal prints calls from as they settle): the same as at
// attempt 1 here, growing unit by unit; another attempt is refused.
func TestAgentSessionLatest(t *testing.T) {
	p, l := approvalAgent(t)
	se := newSessionEnv(t, p, &Activities{})
	var grew []int
	se.before = func(k int, _ *attemptIn) {
		if k == 1 {
			return // the step's first unit: the workflow holds no session yet
		}
		var now, first agentSession
		v, err := se.h.env.QueryWorkflow(QueryAgentSession, 0, 0)
		if err == nil {
			err = v.Get(&now)
		}
		if err != nil {
			t.Errorf("unit %d: at attempt 0: %v", k, err)
			return
		}
		if v, err := se.h.env.QueryWorkflow(QueryAgentSession, 0, 1); err != nil || v.Get(&first) != nil {
			t.Errorf("unit %d: at attempt 1: %v", k, err)
		}
		a, _ := json.Marshal(now)
		if c, _ := json.Marshal(first); string(a) != string(c) || now.Attempt != 1 {
			t.Errorf("unit %d: latest %s, attempt 1 %s", k, a, c)
		}
		if _, err := se.h.env.QueryWorkflow(QueryAgentSession, 0, 2); err == nil {
			t.Errorf("unit %d: a session at attempt 2 answered", k)
		}
		calls := 0
		for _, turn := range now.Turns {
			calls += len(turn.Calls)
		}
		grew = append(grew, len(now.Turns)*100+calls)
	}
	runApprovalAgent(t, se, l)
	if len(grew) < 4 || !slices.IsSorted(grew) || grew[0] == grew[len(grew)-1] {
		t.Errorf("the session answered at each unit (turns×100+calls): %v", grew)
	}
}

// TestAgentSessionUnanswered: a unit whose session neither the worker
// holds nor the workflow answers (its answer not the one the digest
// names) never runs: it is run again as one that never ran, at most
// lostReruns times; the first answer that fits lets it run, and when none
// does the step fails transient (for its on_error), nothing run on a
// wrong session.
func TestAgentSessionUnanswered(t *testing.T) {
	for _, tc := range []struct {
		name  string
		wrong int32 // how many answers are wrong
		ok    bool
	}{{"answered at the third ask", 2, true}, {"never answered right", 100, false}} {
		t.Run(tc.name, func(t *testing.T) {
			p, l := approvalAgent(t)
			se := newSessionEnv(t, p, &Activities{SessionBytes: -1})
			ask := se.a.querySession
			var asked atomic.Int32
			se.a.querySession = func(ctx context.Context, wid, rid string, step, attempt int) (*agentSession, error) {
				s, err := ask(ctx, wid, rid, step, attempt)
				if err != nil || asked.Add(1) > tc.wrong {
					return s, err
				}
				if asked.Load()%2 == 0 {
					return nil, errors.New("workflow unreachable")
				}
				s.Turns[0].Text = "wrong"
				return s, nil
			}
			se.h.env.RegisterDelayedCallback(func() {
				se.h.update(Decision{Step: "agent/turn2/call1", Action: ActionApprove, By: "ana"})
			}, time.Minute)
			st := se.h.run(map[string]any{"task": "refund order 1"})
			if !tc.ok {
				if st.Status != "failed" || st.Error == nil || st.Error.Class != "transient" || !strings.Contains(st.Error.Message, "query "+QueryAgentSession) && !strings.Contains(st.Error.Message, "is not the one the unit was given") {
					t.Fatalf("run: %+v %+v", st, st.Error)
				}
				ids := []string{}
				for _, u := range se.units {
					ids = append(ids, u.id)
				}
				if got := strings.Join(ids, ","); !strings.HasSuffix(got, "turn2/call1,run-1/agent/1/turn2/call1~1,run-1/agent/1/turn2/call1~2,run-1/agent/1/turn2/call1~3") {
					t.Errorf("units %s", got)
				}
				if l.count("refund") != 0 {
					t.Errorf("refund ran %d times", l.count("refund"))
				}
				return
			}
			if st.Status != "succeeded" || string(st.Outputs["agent"]) != `"refunded"` || l.count("refund") != 1 {
				t.Fatalf("run: %+v %+v, refund %d", st, st.Error, l.count("refund"))
			}
		})
	}
}

// TestSessionDigestParts: a decision belongs to the prefix of the turn its
// ref names; one whose ref names no turn always travels.
func TestSessionDigestParts(t *testing.T) {
	ds := map[string]agent.Decision{"turn1/call1": {Verdict: agent.Approve}, "turn2/call3": {Verdict: agent.Reject}, "other": {Verdict: agent.Approve}, "turnx/call1": {}}
	prefix, rest := splitDecisions(ds, 1)
	if len(prefix) != 1 || len(rest) != 3 {
		t.Fatalf("prefix %v, rest %v", prefix, rest)
	}
	if _, ok := prefix["turn1/call1"]; !ok {
		t.Errorf("prefix %v", prefix)
	}
	turns := []agent.Turn{{N: 1, Text: "a"}}
	d := sessionDigest(turns, prefix)
	if d != sessionDigest([]agent.Turn{{N: 1, Text: "a"}}, map[string]agent.Decision{"turn1/call1": {Verdict: agent.Approve}}) {
		t.Error("the same session has two digests")
	}
	if d == sessionDigest([]agent.Turn{{N: 1, Text: "b"}}, prefix) || d == sessionDigest(turns, nil) {
		t.Error("another session has the same digest")
	}
}
