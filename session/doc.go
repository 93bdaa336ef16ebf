// Package session holds chat sessions with an agent: a conversation of
// many messages, each one a durable agent run of a *rein.Client, kept in
// the client's store and recorded with the session's id, so that any
// process that opens the same store continues the same conversation.
//
//	c, err := rein.Open(ctx, rein.Config{DB: "runs.db"}) // import _ ".../store/sqlite"
//	p, err := c.Load("examples/support-agent")            // an agent folder (agent.yaml)
//	svc, err := session.New(c, p, nil)
//	reply, err := svc.Ask(ctx, "ticket-42", "I was charged twice for order 1042")
//	// reply.Result.Status: succeeded (reply.Answer), waiting (reply.Result.Pending), failed
//
// Each message's run sees the session's earlier exchanges as the agent's
// input "history" (Service.Next, within Config's history budget), so the
// conversation survives the process and a run resumed elsewhere (after a
// person's approval, by a worker) sees what it saw. A session whose newest
// run has not finished takes no new message: Ask and Next return a conflict
// *fault.Error (fault.HintSessionWaiting) wrapping a *WaitingError that
// names the run and what it waits on; once a person decides (Client.Decide)
// and the run finishes, the next message sees its answer.
//
// The transcript types (Turn, Call, CallStatus, PlanRun, Usage)
// are aliases of the agent loop's own records, the way rein.Result aliases
// the engine's: the engine decodes an agent run's journal into exactly
// these values, and runs.View.Agents holds them too, so an alias gives a
// surface one type to print a run's transcript with, whether it comes
// from Ask or from rein runs show, with no copy that could drift from the
// journal's records and no conversion on every read. The loop itself stays
// internal; only its records are named here.
//
// A surface that shows a run's progress while it runs (the rein CLI's
// live list, its interrupt handling) starts the run itself: Next gives the
// run's input and options, Reply reads back what the run did. Ask is Next,
// Client.Start and Reply in one call.
package session
