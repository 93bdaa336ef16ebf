package http

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		writeProblem(w, statusErr(http.StatusServiceUnavailable, fault.Transient, "not ready: the runs in flight are not resumed yet"))
		return
	}
	if _, err := s.c.Store().ListRuns(r.Context(), &store.ListRunsParams{Limit: 1}); err != nil {
		writeProblem(w, statusErr(http.StatusServiceUnavailable, fault.Transient, "not ready: the store does not answer: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func (s *Server) listFlows(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"flows": s.flows.info})
}

// run returns the run {id} names, exactly (no prefix, no "last"), when it
// is the caller's tenant's: another tenant's run is not found, as one
// that does not exist.
func (s *Server) run(r *http.Request) (*store.Run, error) {
	id := r.PathValue("id")
	run, err := s.c.Store().GetRun(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || err == nil && !visible(callerOf(r.Context()), run) {
		return nil, notFound(fmt.Sprintf("no run %s", id))
	}
	return run, err
}

// visible reports whether c may see run: its tenant's, or any for the
// local user of a server without tokens.
func visible(c *caller, run *store.Run) bool {
	return c != nil && (c.token == nil || run.Tenant == c.tenant)
}

// StartRequest is the body of POST /v1/runs: a flow and its input, or an
// agent and its task.
type StartRequest struct {
	Flow  string          `json:"flow,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	Agent string          `json:"agent,omitempty"`
	Task  string          `json:"task,omitempty"`
}

// Started is the answer of POST /v1/runs.
type Started struct {
	RunID  string          `json:"run_id"`
	Status trace.RunStatus `json:"status"`
	// Existing: the Idempotency-Key named a run already started.
	Existing bool `json:"existing,omitempty"`
}

func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	var req StartRequest
	if err := decodeBody(w, r, s.o.MaxBodyBytes, &req); err != nil {
		writeProblem(w, err)
		return
	}
	wait, err := waitOf(r)
	if err != nil {
		writeProblem(w, err)
		return
	}
	p, input, err := s.startOf(&req)
	if err != nil {
		writeProblem(w, err)
		return
	}
	c := callerOf(r.Context())
	id, err := uuid.NewV7()
	if err != nil {
		writeProblem(w, err)
		return
	}
	opts := &rein.RunOptions{RunID: id.String(), Tenant: c.tenant}
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		if len(key) > 255 || !printable(key) {
			writeProblem(w, requestErr("", "the Idempotency-Key header: use at most 255 printable ASCII characters"))
			return
		}
		sum := sha256.Sum256([]byte(c.tenant + "\x00" + key))
		opts.IdempotencyKey = "http:" + hex.EncodeToString(sum[:])
	}
	got, err := s.c.Enqueue(r.Context(), p, input, opts)
	if err != nil {
		writeProblem(w, err)
		return
	}
	run, err := s.c.Store().GetRun(r.Context(), got)
	if err != nil {
		writeProblem(w, err)
		return
	}
	out := Started{RunID: run.ID, Status: run.Status, Existing: got != opts.RunID}
	if out.Existing && run.Flow != p.Flow.Name {
		writeProblem(w, statusErr(http.StatusConflict, fault.Conflict,
			"the Idempotency-Key was used for run %s of flow %s, not %s: use a new key for another start", run.ID, run.Flow, p.Flow.Name))
		return
	}
	if wait > 0 {
		if run, err = s.await(r, run.ID, wait); err != nil {
			writeProblem(w, err)
			return
		}
		out.Status = run.Status
	}
	status := http.StatusAccepted
	if out.Existing || run.Finished() || run.Status == trace.RunWaiting {
		status = http.StatusOK
	}
	w.Header().Set("Location", "/v1/runs/"+run.ID)
	writeJSON(w, status, out)
}

func printable(s string) bool {
	for _, r := range s {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// startOf is the project and input a start request names.
func (s *Server) startOf(req *StartRequest) (*project.Project, any, error) {
	switch {
	case req.Flow != "" && req.Agent != "":
		return nil, nil, requestErr("/agent", "give a flow or an agent, not both")
	case req.Flow != "":
		p := s.flows.projects[req.Flow]
		if p == nil || s.flows.kinds[req.Flow] != "flow" {
			return nil, nil, &httpError{status: http.StatusNotFound, pointer: "/flow", err: fault.Errorf(fault.NotFound, "no flow %s is served (GET /v1/flows)", req.Flow)}
		}
		if req.Task != "" {
			return nil, nil, requestErr("/task", "a flow takes an input, not a task")
		}
		var input any
		if len(req.Input) > 0 {
			v, err := project.ParseInput(req.Input, "/input")
			if err != nil {
				return nil, nil, requestErr("/input", "%v", err)
			}
			input = v
		}
		return p, input, nil
	case req.Agent != "":
		p := s.flows.projects[req.Agent]
		if p == nil || s.flows.kinds[req.Agent] != "agent" {
			return nil, nil, &httpError{status: http.StatusNotFound, pointer: "/agent", err: fault.Errorf(fault.NotFound, "no agent %s is served (GET /v1/flows)", req.Agent)}
		}
		if len(req.Input) > 0 {
			return nil, nil, requestErr("/input", "an agent takes a task, not an input")
		}
		if req.Task == "" {
			return nil, nil, requestErr("/task", "the task is empty: say what the agent should do")
		}
		return p, map[string]any{"task": req.Task}, nil
	}
	return nil, nil, requestErr("/flow", "name a flow (with its input) or an agent (with its task)")
}

// waitOf is ?wait= (0 without it), at most MaxWait.
func waitOf(r *http.Request) (time.Duration, error) {
	q := r.URL.Query().Get("wait")
	if q == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(q)
	if err != nil || d < 0 || d > MaxWait {
		return 0, requestErr("", "?wait=%s: give a duration from 0s to %s, such as 30s", q, MaxWait)
	}
	return d, nil
}

// await waits up to d for run id to settle or wait for a person.
func (s *Server) await(r *http.Request, id string, d time.Duration) (*store.Run, error) {
	ctx := r.Context()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(s.o.Poll)
	defer tick.Stop()
	// A run this process advances wakes the wait when it settles or parks
	// (Metrics, the Client's sink); the store is then read every
	// millisecond until the commit shows it. A run advanced elsewhere is
	// seen at the next Poll.
	var woke <-chan struct{}
	if s.o.Metrics != nil {
		ch, stop := s.o.Metrics.watch(id)
		defer stop()
		woke = ch
	}
	for {
		run, err := s.c.Store().GetRun(ctx, id)
		if err != nil || run.Finished() || run.Status == trace.RunWaiting {
			return run, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.done:
			return run, nil
		case <-deadline.C:
			return run, nil
		case <-woke:
			woke = nil
			tick.Reset(time.Millisecond)
		case <-tick.C:
		}
	}
}

// RunsPage is the answer of GET /v1/runs: runs newest first, and the
// cursor of the next page (empty on the last).
type RunsPage struct {
	Runs       any    `json:"runs"`
	NextCursor string `json:"next_cursor,omitempty"`
}

var statuses = []trace.RunStatus{trace.RunPending, trace.RunRunning, trace.RunWaiting, trace.RunSucceeded, trace.RunFailed, trace.RunCancelled}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := &store.ListRunsParams{Flow: q.Get("flow"), Before: q.Get("cursor"), Tenant: callerOf(r.Context()).tenant, Limit: 50}
	if st := q.Get("status"); st != "" {
		p.Status = trace.RunStatus(st)
		ok := false
		for _, s := range statuses {
			ok = ok || s == p.Status
		}
		if !ok {
			writeProblem(w, requestErr("", "?status=%s is none of pending, running, waiting, succeeded, failed, cancelled", st))
			return
		}
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			writeProblem(w, requestErr("", "?limit=%s: give a number from 1 to 100", l))
			return
		}
		p.Limit = n
	}
	rows, err := s.c.Runs().List(r.Context(), p)
	if err != nil {
		writeProblem(w, err)
		return
	}
	page := RunsPage{Runs: rows}
	if rows == nil {
		page.Runs = []any{}
	}
	if len(rows) == p.Limit {
		page.NextCursor = rows[len(rows)-1].ID
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) showRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.run(r)
	if err != nil {
		writeProblem(w, err)
		return
	}
	v, err := s.c.Runs().Show(r.Context(), run.ID)
	if err != nil {
		writeProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// PendingApproval is one entry of GET /v1/approvals: the approval (run,
// step, kind, tool, the exact args, the message), the run's flow, why the
// gate asked (the rule and its reason, from the run's journal) and the
// run's risk tier (0 without risk tiers).
type PendingApproval struct {
	*store.Approval
	Flow     string `json:"flow"`
	Why      string `json:"why,omitempty"`
	RiskTier int    `json:"risk_tier,omitempty"`
}

// explain fills in why the gate asked for a and the run's risk tier, from
// the run's view.
func explain(pa *PendingApproval, v *runs.View) {
	if v.Risk != nil {
		pa.RiskTier = v.Risk.Tier
	}
	for _, g := range v.Gate {
		if g.Tool == pa.Tool && g.Verdict != "allow" && (g.StepID == pa.StepID || strings.HasPrefix(pa.StepID, g.StepID+"/")) {
			pa.Why = g.Why // the last one
		}
	}
}

func (s *Server) approvals(w http.ResponseWriter, r *http.Request) {
	out, _, err := s.pending(r.Context(), callerOf(r.Context()))
	if err != nil {
		writeProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": out})
}

// pending are the decisions waiting across the runs c sees, oldest
// first, with the views of their runs (by run id).
func (s *Server) pending(ctx context.Context, c *caller) ([]PendingApproval, map[string]*runs.View, error) {
	all, err := s.c.Store().Approvals(ctx, &store.ListApprovalsParams{Status: store.ApprovalPending})
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]*runs.View{}
	out := []PendingApproval{}
	for _, a := range all {
		v, ok := seen[a.RunID]
		if !ok {
			run, err := s.c.Store().GetRun(ctx, a.RunID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, nil, err
			}
			if run != nil && visible(c, run) {
				if v, err = s.c.Runs().Show(ctx, run.ID); err != nil {
					return nil, nil, err
				}
			}
			seen[a.RunID] = v
		}
		if v != nil {
			pa := PendingApproval{Approval: a, Flow: v.Run.Flow}
			explain(&pa, v)
			out = append(out, pa)
		}
	}
	return out, seen, nil
}

// DecisionRequest is the body of POST /v1/runs/{id}/decisions.
type DecisionRequest struct {
	Step     string          `json:"step"`
	Decision string          `json:"decision"`
	Comment  string          `json:"comment,omitempty"`
	Value    json.RawMessage `json:"value,omitempty"`
}

var decisions = map[string]store.ApprovalStatus{"approve": store.ApprovalApproved, "reject": store.ApprovalRejected, "settle": store.ApprovalSettled}

func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	run, err := s.run(r)
	if err != nil {
		writeProblem(w, err)
		return
	}
	var req DecisionRequest
	if err := decodeBody(w, r, s.o.MaxBodyBytes, &req); err != nil {
		writeProblem(w, err)
		return
	}
	status, ok := decisions[req.Decision]
	switch {
	case req.Step == "":
		writeProblem(w, requestErr("/step", "name the step decided on"))
		return
	case !ok:
		writeProblem(w, requestErr("/decision", "decision %q is none of approve, reject, settle", req.Decision))
		return
	case status == store.ApprovalSettled && len(req.Value) == 0:
		writeProblem(w, requestErr("/value", "a settle decision needs the step's output as value"))
		return
	case status != store.ApprovalSettled && len(req.Value) > 0:
		writeProblem(w, requestErr("/value", "only a settle decision takes a value"))
		return
	}
	out, err := s.c.Decide(r.Context(), run.ID, req.Step, rein.Decision{Status: status, Comment: req.Comment, Output: req.Value,
		By: callerOf(r.Context()).name}, &rein.DecideOptions{Run: run})
	if err != nil {
		writeProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// optionalBody decodes a body when there is one.
func (s *Server) optionalBody(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return decodeBody(w, r, s.o.MaxBodyBytes, v)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	run, err := s.run(r)
	if err != nil {
		writeProblem(w, err)
		return
	}
	var req struct {
		Reason string `json:"reason,omitempty"`
	}
	if err := s.optionalBody(w, r, &req); err != nil {
		writeProblem(w, err)
		return
	}
	if req.Reason == "" {
		req.Reason = "cancelled by " + callerOf(r.Context()).name
	}
	got, err := s.c.Cancel(r.Context(), run.ID, req.Reason)
	if err != nil {
		writeProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, Started{RunID: got.ID, Status: got.Status})
}

func (s *Server) retry(w http.ResponseWriter, r *http.Request) {
	run, err := s.run(r)
	if err != nil {
		writeProblem(w, err)
		return
	}
	var req struct {
		From string `json:"from,omitempty"`
	}
	if err := s.optionalBody(w, r, &req); err != nil {
		writeProblem(w, err)
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	out, err := s.c.Retry(r.Context(), run.ID, &rein.RetryOptions{From: req.From})
	if err != nil {
		writeProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, Started{RunID: out.Result.RunID, Status: out.Result.Status})
}

func (s *Server) effects(w http.ResponseWriter, r *http.Request) {
	run, err := s.run(r)
	if err != nil {
		writeProblem(w, err)
		return
	}
	v, err := s.c.Runs().Effects(r.Context(), run.ID)
	if err != nil {
		writeProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) why(w http.ResponseWriter, r *http.Request) {
	run, err := s.run(r)
	if err != nil {
		writeProblem(w, err)
		return
	}
	step := r.URL.Query().Get("step")
	if step == "" {
		// the run as a whole: its guardrail trips, log-only rules, failures.
		v, err := s.c.Runs().WhyRun(r.Context(), run.ID)
		if err != nil {
			writeProblem(w, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
		return
	}
	v, err := s.c.Runs().Why(r.Context(), run.ID, step)
	if err != nil {
		writeProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) impact(w http.ResponseWriter, r *http.Request) {
	run, err := s.run(r)
	if err != nil {
		writeProblem(w, err)
		return
	}
	premise := r.URL.Query().Get("premise")
	if premise == "" {
		writeProblem(w, requestErr("", "?premise= is missing: name the step or call whose result turned out wrong"))
		return
	}
	v, err := s.c.Runs().Impact(r.Context(), run.ID, premise, nil)
	if err != nil {
		writeProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// RemediateRequest is the body of POST /v1/runs/{id}/remediate.
type RemediateRequest struct {
	Premise string `json:"premise"`
	Reason  string `json:"reason,omitempty"`
}

func (s *Server) remediate(w http.ResponseWriter, r *http.Request) {
	run, err := s.run(r)
	if err != nil {
		writeProblem(w, err)
		return
	}
	var req RemediateRequest
	if err := decodeBody(w, r, s.o.MaxBodyBytes, &req); err != nil {
		writeProblem(w, err)
		return
	}
	if req.Premise == "" {
		writeProblem(w, requestErr("/premise", "name the step or call whose result turned out wrong"))
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	out, err := s.c.Remediate(r.Context(), run.ID, req.Premise, &rein.RemediateOptions{Reason: req.Reason})
	if err != nil {
		writeProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.o.Metrics == nil {
		writeProblem(w, notFound("this server keeps no metrics"))
		return
	}
	s.o.Metrics.handler(s.c.Store()).ServeHTTP(w, r)
}

func (s *Server) mcp(w http.ResponseWriter, r *http.Request) {
	if s.o.MCP == nil {
		writeProblem(w, notFound("this server serves no MCP"))
		return
	}
	// A token of one tenant scopes its MCP calls to that tenant's runs
	// (runs.TenantHeader, read by server/mcp); what a client sent in that
	// header itself is dropped. Admin tokens and the local user see all.
	r.Header.Del(runs.TenantHeader)
	if c := callerOf(r.Context()); c != nil && c.token != nil && !c.token.Has(ScopeAdmin) {
		r.Header.Set(runs.TenantHeader, c.tenant)
	}
	s.o.MCP.ServeHTTP(w, r)
}
