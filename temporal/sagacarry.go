package temporal

import (
	"maps"

	"go.temporal.io/sdk/workflow"
)

// changeSagaCarry: a run waiting on a saga's escalation continues as new
// as any waiting run does (before, it went on in one history).
const changeSagaCarry = "rein-saga-carry"

// sagaShouldContinue reports whether the run, its saga waiting on a
// person, continues as new here (shouldContinue: nothing is in flight as
// the saga waits). The change is asked only where the run would, so that
// a history recorded before replays as it ran.
func (r *wrun) sagaShouldContinue(ctx workflow.Context) bool {
	return r.shouldContinue(ctx, 0) && version(ctx, changeSagaCarry) != workflow.DefaultVersion
}

// carrySaga puts into c what the saga's remediation needs besides its
// effects and the keys it remediated: how often each call was made and
// the escalations that wait, with a decision taken as the run continued
// (the new run carries it out).
func (r *wrun) carrySaga(c *Carry) {
	if len(r.saga.made) > 0 {
		c.Made = maps.Clone(r.saga.made)
	}
	for _, e := range r.saga.effects { // in the order the calls completed
		if r.saga.taken[e.Key] {
			c.TakenBack = append(c.TakenBack, e.Key)
		}
	}
	for k, e := range r.saga.waiting {
		if c.Escalations == nil {
			c.Escalations = map[string]*sagaEscalation{}
		}
		c.Escalations[k] = e
	}
}

// restoreSaga takes carrySaga's state back (after saga.init): the
// saga goes on from it once the restored run fails again into its
// remediation (compensate), waiting on the same escalations, under the
// same ids.
func (r *wrun) restoreSaga(c *Carry) {
	maps.Copy(r.saga.made, c.Made)
	maps.Copy(r.saga.waiting, c.Escalations)
	for _, k := range c.TakenBack {
		r.saga.taken[k] = true
	}
}
