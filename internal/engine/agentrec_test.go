package engine_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/trace"
)

// agentCallData is the JSON of the agent's call ev records (its call
// record's Agent part, or an agent_call event's Data), "" for any other
// event: what the transcript holds of the call.
func agentCallData(t *testing.T, ev *trace.Event) string {
	t.Helper()
	c, _, ok, err := engine.AgentCallOf(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return ""
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// since is turns with only what the corpus's engine journaled of each
// call: the fields added to an agent's call since (its traced provenance,
// args digest, rule, consumed approvals, declaration) are left out.
func since(turns []agent.Turn) []agent.Turn {
	out := make([]agent.Turn, len(turns))
	for i, t := range turns {
		t.Calls = slices.Clone(t.Calls)
		for j := range t.Calls {
			c := &t.Calls[j]
			c.Provenance, c.Verified, c.ArgsSHA, c.Rule, c.Consumed, c.Declaration, c.Claims = nil, nil, "", "", nil, nil, nil
		}
		out[i] = t
	}
	return out
}

// An agent's calls are journaled as call records carrying the loop's part
// (journal.Call.Agent), with no agent_call event; the transcript a resume
// and the views fold from them is the one an earlier engine's agent_call
// events give: each agent case of the replay corpus (journals an earlier
// engine wrote, approvals decided and the run resumed) is run again and
// both journals fold to the same turns.
func TestAgentCallsAreCallRecords(t *testing.T) {
	t.Parallel()
	ran := 0
	for _, c := range replayCases() {
		if !strings.HasPrefix(c.name, "agent_") {
			continue
		}
		ran++
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			old := readJournal(t, filepath.Join(replayDir, c.name+".jsonl"))
			st := openSQLite(t)
			runID, _ := c.run(t, st)
			evs, err := st.Events(context.Background(), runID, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			records := 0
			for _, ev := range evs {
				switch {
				case ev.Kind == trace.AgentCall:
					t.Fatalf("event %d is an agent_call event: an agent's call is its call record", ev.Seq)
				case ev.Kind == trace.CallRecorded && ev.Call != nil && ev.Call.Turn > 0 && ev.Call.PlanStep == "":
					if ev.Call.Agent == nil {
						t.Errorf("the call record of %s (event %d) has no Agent part", ev.Call.Key, ev.Seq)
					}
					records++
				}
			}
			if records == 0 {
				t.Fatal("the journal holds no call record of the agent's calls")
			}
			got, err := engine.FoldAgentTranscript(evs, "support", 0)
			if err != nil {
				t.Fatal(err)
			}
			want, err := engine.FoldAgentTranscript(old, "support", 0)
			if err != nil {
				t.Fatal(err)
			}
			gb, _ := json.MarshalIndent(since(got), "", "  ")
			wb, _ := json.MarshalIndent(since(want), "", "  ")
			if len(want) == 0 || string(gb) != string(wb) {
				t.Errorf("the call records fold to\n%s\nthe agent_call events of %s.jsonl to\n%s", gb, c.name, wb)
			}
			// and the store's call records are one per call, the last word
			// of each: the loop's status, its key, its args.
			calls, err := st.Calls(context.Background(), runID, "support")
			if err != nil {
				t.Fatal(err)
			}
			for _, cl := range calls {
				if cl.Agent == nil || cl.PlanStep != "" {
					continue
				}
				tc := got[cl.Turn-1].Calls[cl.Index-1]
				if cl.Key != tc.Key || cl.Agent.Status != string(tc.Status) || cl.Agent.Args != tc.Args {
					t.Errorf("call record %s: %s %q, the transcript's call: %s %q", cl.Key, cl.Agent.Status, cl.Agent.Args, tc.Status, tc.Args)
				}
			}
		})
	}
	if ran == 0 {
		t.Fatal("no agent case in the replay corpus")
	}
}
