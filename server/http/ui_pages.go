package http

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/graph"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/server/http/ui"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// uiBase is what every page shows: its title, the navigation entry, who
// is logged in, and the CSRF token of its forms.
type uiBase struct {
	Title, Nav  string
	Who, Tenant string
	Sessions    bool // a login is in use: show Log out
	CSRF        string
	CanApprove  bool
	Flash       string
	// Status, Heading and Message are an error page's, Message also a
	// login page's.
	Status           int
	Heading, Message string
}

func (s *Server) base(c *uiCaller, title, nav string) uiBase {
	b := uiBase{Title: title, Nav: nav, Sessions: s.o.Tokens != nil}
	if c != nil {
		b.Who, b.Tenant, b.CSRF = c.name, c.tenant, c.csrf
		b.CanApprove = c.can(ScopeApprove)
	}
	return b
}

// page renders a whole page.
func (s *Server) page(w http.ResponseWriter, status int, name string, data any) {
	var b bytes.Buffer
	if err := ui.Render(&b, name, data); err != nil {
		s.o.Logf("%v", err)
		http.Error(w, "the page could not be drawn: see the server's log", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// uiError renders err as a page with its status (404 for another
// tenant's run, as the API).
func (s *Server) uiError(w http.ResponseWriter, c *uiCaller, err error) {
	status := statusOf(err)
	b := s.base(c, http.StatusText(status), "")
	b.Status, b.Heading, b.Message = status, http.StatusText(status), err.Error()
	s.page(w, status, "error.html", b)
}

// uiRow is a run of the list, with a preview of its input.
type uiRow struct {
	*runs.Row
	Preview string
}

type uiRunsPage struct {
	uiBase
	Rows            []uiRow
	Statuses, Flows []string
	Status, Flow, Q string
	Query           string
	Filtered        bool
}

// searchWindow is how many of the newest runs a search looks through.
const searchWindow = 500

func (s *Server) uiRunsData(r *http.Request, c *uiCaller) (*uiRunsPage, error) {
	q := r.URL.Query()
	d := &uiRunsPage{uiBase: s.base(c, "Runs", "runs"), Status: q.Get("status"), Flow: q.Get("flow"), Q: strings.TrimSpace(q.Get("q"))}
	for _, st := range statuses {
		d.Statuses = append(d.Statuses, string(st))
	}
	for _, f := range s.flows.info {
		d.Flows = append(d.Flows, f.Name)
	}
	p := &store.ListRunsParams{Flow: d.Flow, Tenant: c.tenant, Limit: 100}
	if d.Status != "" {
		if !slices.Contains(d.Statuses, d.Status) {
			return nil, requestErr("", "?status=%s is none of %s", d.Status, strings.Join(d.Statuses, ", "))
		}
		p.Status = trace.RunStatus(d.Status)
	}
	if d.Q != "" {
		p.Limit = searchWindow
	}
	rows, err := s.c.Runs().List(r.Context(), p)
	if err != nil {
		return nil, err
	}
	needle := strings.ToLower(d.Q)
	for _, row := range rows {
		in := string(row.Input)
		if needle != "" && !strings.Contains(strings.ToLower(row.ID+" "+row.Flow+" "+in), needle) {
			continue
		}
		d.Rows = append(d.Rows, uiRow{Row: row, Preview: preview(in, 80)})
		if len(d.Rows) == 100 {
			break
		}
	}
	v := url.Values{}
	for k, x := range map[string]string{"status": d.Status, "flow": d.Flow, "q": d.Q} {
		if x != "" {
			v.Set(k, x)
		}
	}
	d.Query, d.Filtered = v.Encode(), len(v) > 0
	return d, nil
}

func preview(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func (s *Server) uiRuns(w http.ResponseWriter, r *http.Request, c *uiCaller) {
	d, err := s.uiRunsData(r, c)
	if err != nil {
		s.uiError(w, c, err)
		return
	}
	s.page(w, http.StatusOK, "runs.html", d)
}

// uiRows is the rows of the runs list alone (the list polls it).
func (s *Server) uiRows(w http.ResponseWriter, r *http.Request, c *uiCaller) {
	d, err := s.uiRunsData(r, c)
	if err != nil {
		s.uiError(w, c, err)
		return
	}
	s.page(w, http.StatusOK, "rows.html", d)
}

// uiAttempt is one attempt of a step: when it started, how long it took,
// what its model calls cost, how it ended.
type uiAttempt struct {
	Step                       string
	Attempt                    int
	Status                     string
	Start                      time.Time
	Duration                   string
	Calls, TokensIn, TokensOut int
	// Cost is what the attempt's model calls cost by the rein.yaml price
	// table ("0.0123 USD"); "" when none of its models is priced.
	Cost  string
	Error string
	// Guardrails are the attempt's guardrail trips: "name (kind, side):
	// stop" or "…: ask" (it waited for a person).
	Guardrails []string
	cost       int64 // micro-units of currency
}

// uiAgent is the transcript of an agent step.
type uiAgent struct {
	Step  string
	Turns any
}

// uiApproval is a pending decision as the inbox and a run show it.
type uiApproval struct {
	PendingApproval
	Provenance []journal.ArgProvenance
	CanDecide  bool
	CSRF, Back string
}

type uiRunPage struct {
	uiBase
	Run      *store.Run
	Finished bool
	Usage    string
	SVG      template.HTML
	Attempts []uiAttempt
	Steps    []runs.StepView
	Agents   []uiAgent
	Pending  []uiApproval
}

// maxTimelineEvents bounds the journal read for a run's timeline.
const maxTimelineEvents = 20000

// runPage gathers the run page of run: its view, its flow drawn with the
// steps' states, the attempts from its journal. f is the run's flow.
func (s *Server) runPage(ctx context.Context, c *uiCaller, run *store.Run, f *flow.Flow) (*uiRunPage, error) {
	v, err := s.c.Runs().Show(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	d := &uiRunPage{uiBase: s.base(c, "Run "+run.ID[:min(8, len(run.ID))], "runs"), Run: v.Run.Run, Finished: v.Run.Finished(), Steps: v.Steps}
	if len(run.Usage) > 0 {
		d.Usage = string(run.Usage)
	}
	status, note := map[string]string{}, map[string]string{}
	for _, st := range v.Steps {
		status[st.StepID] = string(st.Status)
	}
	items := map[string]map[int]bool{}
	for _, call := range v.Calls {
		if call.Item >= 0 {
			if items[call.StepID] == nil {
				items[call.StepID] = map[int]bool{}
			}
			items[call.StepID][call.Item] = true
		}
	}
	for id, its := range items {
		note[id] = fmt.Sprintf("fan-out: %d items", len(its))
	}
	if f != nil {
		var b bytes.Buffer
		if err := graph.SVG(&b, f, status, note); err == nil {
			d.SVG = template.HTML(b.String()) // graph.SVG escapes every text
		}
	}
	if d.Attempts, err = s.attempts(ctx, run.ID, s.prices(run.Flow)); err != nil {
		return nil, err
	}
	for _, step := range slices.Sorted(func(yield func(string) bool) {
		for k := range v.Agents {
			if !yield(k) {
				return
			}
		}
	}) {
		d.Agents = append(d.Agents, uiAgent{Step: step, Turns: v.Agents[step]})
	}
	for _, a := range v.Pending() {
		pa := PendingApproval{Approval: a, Flow: run.Flow}
		explain(&pa, v)
		d.Pending = append(d.Pending, s.uiApproval(c, pa, v, "/runs/"+run.ID))
	}
	return d, nil
}

// uiApproval adds to pa the provenance of its call's arguments (from the
// run's call records: the record's, or an agent call's traced one) and its
// form.
func (s *Server) uiApproval(c *uiCaller, pa PendingApproval, v *runs.View, back string) uiApproval {
	out := uiApproval{PendingApproval: pa, CanDecide: c.can(ScopeApprove) && c.csrf != "", CSRF: c.csrf, Back: back}
	for _, call := range v.Calls {
		if call.Name != pa.Tool || !callOf(call, pa.StepID) {
			continue
		}
		if out.Why == "" && call.Agent != nil {
			out.Why = call.Agent.Rule
		}
		if len(call.Provenance) > 0 {
			out.Provenance = call.Provenance
		} else if call.Agent != nil && len(call.Agent.Provenance) > 0 {
			var m map[string][]string
			if json.Unmarshal(call.Agent.Provenance, &m) == nil {
				out.Provenance = nil
				for _, k := range slices.Sorted(maps.Keys(m)) {
					out.Provenance = append(out.Provenance, journal.ArgProvenance{Pointer: k, Origins: m[k]})
				}
			}
		}
	}
	return out
}

// callOf reports whether call is the call an approval of step waits on:
// the step's own call, or an agent's call (step "<step>/turn<t>/call<i>").
func callOf(call *store.Call, step string) bool {
	if call.Turn > 0 {
		return step == fmt.Sprintf("%s/turn%d/call%d", call.StepID, call.Turn, call.Index)
	}
	return call.StepID == step || strings.HasPrefix(step, call.StepID+"/")
}

// attempts are a run's attempts, from its journal: each step_started
// opens one, an attempt_failed or step_settled closes it, the model
// calls between add their tokens.
func (s *Server) attempts(ctx context.Context, runID string, price func(model string) *flow.PriceDecl) ([]uiAttempt, error) {
	var out []uiAttempt
	open := map[string]int{} // step id → index in out
	var after int64
	for after < maxTimelineEvents {
		evs, err := s.c.Store().Events(ctx, runID, after, 1000)
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			after = e.Seq
			i, ok := open[e.StepID]
			switch e.Kind {
			case trace.StepStarted:
				open[e.StepID] = len(out)
				out = append(out, uiAttempt{Step: e.StepID, Attempt: max(e.Attempt, 1), Status: "running", Start: e.Time})
			case trace.ModelCall:
				if ok {
					out[i].Calls++
					out[i].TokensIn += e.TokensIn
					out[i].TokensOut += e.TokensOut
					if p := price(e.Model); p != nil {
						out[i].cost += p.Cost(int64(e.TokensIn), int64(e.TokensOut))
						out[i].Cost = formatCost(out[i].cost, p.Currency)
					}
				}
			case trace.GuardrailTripped:
				if g, err := journal.DecodeGuardrailTrip(e.Data); ok && err == nil {
					out[i].Guardrails = append(out[i].Guardrails, fmt.Sprintf("%s (%s, %s): %s", g.Name, g.Kind, g.Side, e.Decision))
				}
			case trace.AttemptFailed, trace.StepSettled:
				if !ok {
					continue
				}
				a := &out[i]
				a.Status, a.Duration, a.Error = e.Status, ui.Duration(a.Start, e.Time), e.Error
				if e.Kind == trace.AttemptFailed {
					a.Status = "failed"
					if a.Error == "" {
						a.Error = e.ErrorClass
					}
				}
				delete(open, e.StepID)
			}
		}
		if len(evs) < 1000 {
			break
		}
	}
	for _, i := range open {
		if out[i].Status == "running" {
			out[i].Duration = ui.Duration(out[i].Start, time.Now()) + " so far"
		}
	}
	return out, nil
}

// uiRunOf is the run {id} names when c may see it (404 otherwise, as the
// API), with its flow (nil when it cannot be loaded: the page has no
// graph).
func (s *Server) uiRunOf(r *http.Request, c *uiCaller) (*store.Run, *flow.Flow, error) {
	id := r.PathValue("id")
	run, err := s.c.Store().GetRun(r.Context(), id)
	if err != nil || !visible(c.caller, run) {
		return nil, nil, notFound(fmt.Sprintf("no run %s", id))
	}
	var f *flow.Flow
	if _, p, err := s.c.Runs().Load(r.Context(), run.ID); err == nil {
		f = p.Flow
		_ = p.Close()
	}
	return run, f, nil
}

func (s *Server) uiRun(w http.ResponseWriter, r *http.Request, c *uiCaller) {
	run, f, err := s.uiRunOf(r, c)
	if err != nil {
		s.uiError(w, c, err)
		return
	}
	d, err := s.runPage(r.Context(), c, run, f)
	if err != nil {
		s.uiError(w, c, err)
		return
	}
	s.page(w, http.StatusOK, "run.html", d)
}

type uiApprovalsPage struct {
	uiBase
	Pending []uiApproval
}

func (s *Server) uiApprovals(w http.ResponseWriter, r *http.Request, c *uiCaller) {
	pending, views, err := s.pending(r.Context(), c.caller)
	if err != nil {
		s.uiError(w, c, err)
		return
	}
	d := uiApprovalsPage{uiBase: s.base(c, "Approvals", "approvals")}
	for _, pa := range pending {
		d.Pending = append(d.Pending, s.uiApproval(c, pa, views[pa.RunID], "/approvals"))
	}
	s.page(w, http.StatusOK, "approvals.html", d)
}

type uiEffectsPage struct {
	uiBase
	View        *runs.EffectsView
	Premise     string
	Impact      *runs.ImpactView
	ImpactError string
}

func (s *Server) uiEffects(w http.ResponseWriter, r *http.Request, c *uiCaller) {
	run, _, err := s.uiRunOf(r, c)
	if err != nil {
		s.uiError(w, c, err)
		return
	}
	v, err := s.c.Runs().Effects(r.Context(), run.ID)
	if err != nil {
		s.uiError(w, c, err)
		return
	}
	d := uiEffectsPage{uiBase: s.base(c, "Effects "+run.ID[:min(8, len(run.ID))], "runs"), View: v, Premise: r.URL.Query().Get("premise")}
	if d.Premise != "" {
		if d.Impact, err = s.c.Runs().Impact(r.Context(), run.ID, d.Premise, nil); err != nil {
			d.ImpactError = err.Error()
		}
	}
	s.page(w, http.StatusOK, "effects.html", d)
}

type uiFlowsPage struct {
	uiBase
	Flows []FlowInfo
	Info  FlowInfo
	SVG   template.HTML
}

func (s *Server) uiFlows(w http.ResponseWriter, _ *http.Request, c *uiCaller) {
	s.page(w, http.StatusOK, "flows.html", uiFlowsPage{uiBase: s.base(c, "Flows", "flows"), Flows: s.flows.info})
}

func (s *Server) uiFlow(w http.ResponseWriter, r *http.Request, c *uiCaller) {
	name := r.PathValue("name")
	for _, info := range s.flows.info {
		if info.Name != name {
			continue
		}
		d := uiFlowsPage{uiBase: s.base(c, info.Name, "flows"), Info: info}
		if p := s.flows.projects[name]; p != nil && s.flows.kinds[name] == "flow" {
			var b bytes.Buffer
			if err := graph.SVG(&b, p.Flow, nil, nil); err == nil {
				d.SVG = template.HTML(b.String()) // graph.SVG escapes every text
			}
		}
		s.page(w, http.StatusOK, "flow.html", d)
		return
	}
	s.uiError(w, c, notFound(fmt.Sprintf("no flow %s is served", name)))
}

// prices is the price table of the served flow or agent named name (its
// rein.yaml models: price:), looked up by a model call's model: the
// entry's name or the provider's model name it declares. Nil prices for a
// flow the server does not serve, or a model without price:.
func (s *Server) prices(name string) func(model string) *flow.PriceDecl {
	var cfg *flow.Config
	if p := s.flows.projects[name]; p != nil {
		cfg = p.Config()
	}
	return func(model string) *flow.PriceDecl {
		if cfg == nil || model == "" {
			return nil
		}
		if m := cfg.Models[model]; m != nil {
			return m.Price
		}
		for _, n := range slices.Sorted(maps.Keys(cfg.Models)) {
			if m := cfg.Models[n]; m.Model == model && m.Price != nil {
				return m.Price
			}
		}
		return nil
	}
}

// formatCost writes micro-units of currency as the UI shows them.
func formatCost(micros int64, currency string) string {
	if currency == "" {
		currency = "USD"
	}
	return strconv.FormatFloat(float64(micros)/float64(store.MicrosPerUnit), 'f', -1, 64) + " " + currency
}
