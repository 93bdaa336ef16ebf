package http

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// countCap bounds the runs counted per status at a scrape.
const countCap = 10000

// Metrics are the server's Prometheus metrics. It is a trace.Sink: give
// it to the Client (rein.Config.Sink) so the events of the runs this
// process advances are counted — step and model-call durations, retries,
// tokens, gate decisions by verdict and the log-only rules that held,
// guardrail trips, runs settled — and at each scrape it
// reads from the store the runs in flight by status, the queue depth and
// the pending approvals.
type Metrics struct {
	reg       *prometheus.Registry
	steps     *prometheus.HistogramVec
	models    *prometheus.HistogramVec
	tokens    *prometheus.CounterVec
	retries   *prometheus.CounterVec
	gate      *prometheus.CounterVec
	logOnly   *prometheus.CounterVec
	guard     *prometheus.CounterVec
	settled   *prometheus.CounterVec
	st        store.Store
	live      *prometheus.Desc
	pending   *prometheus.Desc
	queue     *prometheus.Desc
	scrapeErr *prometheus.Desc
	// waiters are the waits (Server.await) on runs this process
	// advances, woken when a run settles or parks.
	waitMu  sync.Mutex
	waiters map[string][]chan struct{}
	// gated are the gate decisions counted of each call record of the
	// runs in flight, by run and key: a call recorded as started, then
	// settled, was decided once (journal.GateDecisions reads them so).
	gateMu sync.Mutex
	gated  map[string]map[string][]journal.CallGate
	// spentTokens and spentCost are the budget ledger's use of today
	// (UTC) by tenant.
	spentTokens, spentCost *prometheus.Desc
}

// NewMetrics returns the metrics, in a registry of their own (with the
// Go runtime's and the process's collectors).
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	buckets := prometheus.ExponentialBuckets(0.001, 4, 10) // 1 ms … ~4.4 min
	m.steps = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rein_step_duration_seconds",
		Help: "Duration of settled steps, by flow, step type and status.", Buckets: buckets}, []string{"flow", "type", "status"})
	m.models = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rein_model_call_duration_seconds",
		Help: "Duration of model calls, by model.", Buckets: buckets}, []string{"model"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rein_model_tokens_total",
		Help: "Model tokens, by model and direction (in, out)."}, []string{"model", "direction"})
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rein_step_retries_total",
		Help: "Failed attempts followed by a retry or on_error, by flow and error class."}, []string{"flow", "class"})
	m.gate = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rein_gate_decisions_total",
		Help: "Policy gate decisions on tool calls, by verdict."}, []string{"decision"})
	m.logOnly = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rein_gate_log_only_total",
		Help: "Log-only policy rules (enforce: false) that held on a tool call, by the verdict they would have given (not applied)."}, []string{"verdict"})
	m.guard = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rein_guardrail_trips_total",
		Help: "Guardrail trips of agent and llm steps, by kind (regex, deny, schema, check, judge), side (input, output) and on_trip (stop, ask)."}, []string{"kind", "side", "on_trip"})
	m.settled = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rein_runs_settled_total",
		Help: "Runs this process settled, by flow and final status."}, []string{"flow", "status"})
	m.live = prometheus.NewDesc("rein_runs", "Runs in the store by status (pending, running, waiting), counted up to 10000.", []string{"status"}, nil)
	m.pending = prometheus.NewDesc("rein_approvals_pending", "Decisions waiting for a person, across the store.", nil, nil)
	m.queue = prometheus.NewDesc("rein_queue_depth", "Runs ready for a worker (pending), counted up to 10000.", nil, nil)
	m.spentTokens = prometheus.NewDesc("rein_budget_tokens_today", "Model tokens the budget ledger counts for today (UTC), by tenant: settled calls and open reservations.", []string{"tenant"}, nil)
	m.spentCost = prometheus.NewDesc("rein_budget_cost_today", "Model cost (in the price table's currency) the budget ledger counts for today (UTC), by tenant.", []string{"tenant"}, nil)
	m.scrapeErr = prometheus.NewDesc("rein_store_scrape_errors", "1 when the store could not be read at this scrape.", nil, nil)
	m.reg.MustRegister(m.steps, m.models, m.tokens, m.retries, m.gate, m.logOnly, m.guard, m.settled,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Emit counts e.
func (m *Metrics) Emit(_ context.Context, e *trace.Event) {
	switch e.Kind {
	case trace.StepSettled:
		m.steps.WithLabelValues(e.Flow, e.StepType, e.Status).Observe(e.DurationMS / 1000)
	case trace.ModelCall:
		m.models.WithLabelValues(e.Model).Observe(e.DurationMS / 1000)
		if e.TokensIn > 0 {
			m.tokens.WithLabelValues(e.Model, "in").Add(float64(e.TokensIn))
		}
		if e.TokensOut > 0 {
			m.tokens.WithLabelValues(e.Model, "out").Add(float64(e.TokensOut))
		}
	case trace.AttemptFailed:
		m.retries.WithLabelValues(e.Flow, e.ErrorClass).Inc()
	case trace.GateDecision: // journals before version 2
		m.gate.WithLabelValues(e.Decision).Inc()
	case trace.CallRecorded:
		m.countGate(e)
	case trace.GuardrailTripped:
		if g, err := journal.DecodeGuardrailTrip(e.Data); err == nil {
			m.guard.WithLabelValues(g.Kind, g.Side, e.Decision).Inc()
		}
	case trace.RunSettled:
		m.settled.WithLabelValues(e.Flow, e.Status).Inc()
		m.forgetGates(e.RunID)
		m.wake(e.RunID)
	case trace.RunParked:
		m.forgetGates(e.RunID)
		m.wake(e.RunID)
	}
}

// countGate counts the gate decisions of a call record (and the
// log-only rules that held), unless its key's record before held the
// same.
func (m *Metrics) countGate(e *trace.Event) {
	c := e.Call
	if c == nil || len(c.Gate) == 0 {
		return
	}
	m.gateMu.Lock()
	if m.gated == nil {
		m.gated = map[string]map[string][]journal.CallGate{}
	}
	byKey := m.gated[e.RunID]
	if byKey == nil {
		byKey = map[string][]journal.CallGate{}
		m.gated[e.RunID] = byKey
	}
	same := sameVerdicts(byKey[c.Key], c.Gate)
	byKey[c.Key] = c.Gate
	m.gateMu.Unlock()
	if same {
		return
	}
	for _, d := range c.Gate {
		m.gate.WithLabelValues(d.Verdict).Inc()
		for _, l := range d.LogOnly {
			m.logOnly.WithLabelValues(l.Verdict).Inc()
		}
	}
}

// forgetGates drops what countGate kept of run id, which settled or
// waits for a person.
func (m *Metrics) forgetGates(id string) {
	m.gateMu.Lock()
	delete(m.gated, id)
	m.gateMu.Unlock()
}

func sameVerdicts(a, b []journal.CallGate) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Verdict != b[i].Verdict || a[i].Why != b[i].Why || len(a[i].LogOnly) != len(b[i].LogOnly) {
			return false
		}
	}
	return true
}

// watch returns a channel closed once this process's Client records that
// run id settled or waits for a person (its sink gets the event as it is
// recorded, which may be just before its commit), and what stops the
// watch.
func (m *Metrics) watch(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	m.waitMu.Lock()
	if m.waiters == nil {
		m.waiters = map[string][]chan struct{}{}
	}
	m.waiters[id] = append(m.waiters[id], ch)
	m.waitMu.Unlock()
	return ch, func() {
		m.waitMu.Lock()
		defer m.waitMu.Unlock()
		ws := m.waiters[id]
		for i, w := range ws {
			if w == ch {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(m.waiters, id)
		} else {
			m.waiters[id] = ws
		}
	}
}

// wake closes the watches of run id.
func (m *Metrics) wake(id string) {
	m.waitMu.Lock()
	ws := m.waiters[id]
	delete(m.waiters, id)
	m.waitMu.Unlock()
	for _, w := range ws {
		close(w)
	}
}

// storeCollector reads the store at each scrape.
type storeCollector struct {
	m  *Metrics
	st store.Store
}

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.m.live
	ch <- c.m.pending
	ch <- c.m.queue
	ch <- c.m.scrapeErr
	ch <- c.m.spentTokens
	ch <- c.m.spentCost
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	failed := 0.0
	for _, s := range []trace.RunStatus{trace.RunPending, trace.RunRunning, trace.RunWaiting} {
		runs, err := c.st.ListRuns(ctx, &store.ListRunsParams{Status: s, Limit: countCap})
		if err != nil {
			failed = 1
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.m.live, prometheus.GaugeValue, float64(len(runs)), string(s))
		if s == trace.RunPending {
			ch <- prometheus.MustNewConstMetric(c.m.queue, prometheus.GaugeValue, float64(len(runs)))
		}
	}
	if as, err := c.st.Approvals(ctx, &store.ListApprovalsParams{Status: store.ApprovalPending}); err == nil {
		ch <- prometheus.MustNewConstMetric(c.m.pending, prometheus.GaugeValue, float64(len(as)))
	} else {
		failed = 1
	}
	if spend, err := c.st.Spend(ctx, store.DayOf(time.Now()), ""); err == nil {
		for _, s := range spend {
			ch <- prometheus.MustNewConstMetric(c.m.spentTokens, prometheus.GaugeValue, float64(s.Tokens), s.Tenant)
			ch <- prometheus.MustNewConstMetric(c.m.spentCost, prometheus.GaugeValue, float64(s.Cost)/store.MicrosPerUnit, s.Tenant)
		}
	} else {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(c.m.scrapeErr, prometheus.GaugeValue, failed)
}

// handler serves the metrics, reading st at each scrape.
func (m *Metrics) handler(st store.Store) http.Handler {
	if m.st == nil {
		m.st = st
		m.reg.MustRegister(storeCollector{m: m, st: st})
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
