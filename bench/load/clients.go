package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// target is the server under load: its base URL, a token of run scope
// and an admin token (for /metrics).
type target struct{ base, token, admin string }

// Route classes of the report.
const (
	classStart = "start W5 (wait)"
	classRun   = "GET run"
	classList  = "GET runs"
	classInbox = "GET approvals"
	classSSE   = "SSE events"
)

var classes = []string{classStart, classRun, classList, classInbox, classSSE}

// stats are one client's latencies and errors by class.
type stats struct {
	lat      map[string][]time.Duration
	errs     map[string]int
	finished int // W5 runs that answered succeeded
	firstErr string
}

func newStats() *stats {
	return &stats{lat: map[string][]time.Duration{}, errs: map[string]int{}}
}

// load runs clients clients against t for d and returns the report.
func load(ctx context.Context, t target, clients int, d time.Duration, sseEvery int) (*report, error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients * 2, MaxConnsPerHost: clients * 2}, Timeout: 60 * time.Second}
	before, err := scrape(ctx, hc, t)
	if err != nil {
		return nil, fmt.Errorf("/metrics before: %w", err)
	}
	all := make([]*stats, clients)
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(d)
	for i := range clients {
		all[i] = newStats()
		wg.Add(1)
		go func() {
			defer wg.Done()
			client(ctx, hc, t, i, stop, sseEvery, all[i])
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	time.Sleep(2 * time.Second) // let the server's idle connections and streams end
	hc.CloseIdleConnections()
	after, err := scrape(ctx, hc, t)
	if err != nil {
		return nil, fmt.Errorf("/metrics after: %w", err)
	}
	r := &report{clients: clients, duration: d, elapsed: elapsed, before: before, after: after,
		lat: map[string][]time.Duration{}, errs: map[string]int{}}
	for _, s := range all {
		for c, l := range s.lat {
			r.lat[c] = append(r.lat[c], l...)
		}
		for c, n := range s.errs {
			r.errs[c] += n
		}
		r.finished += s.finished
		if r.firstErr == "" {
			r.firstErr = s.firstErr
		}
	}
	return r, nil
}

// client loops until stop: start a W5 run and wait for it, read its page;
// every 4th iteration the runs list and the inbox; every sseEvery-th its
// event stream to the end.
func client(ctx context.Context, hc *http.Client, t target, id int, stop time.Time, sseEvery int, s *stats) {
	for i := 0; time.Now().Before(stop); i++ {
		body := fmt.Sprintf(`{"flow":"w5","input":{"id":"c%d-%d","name":"load","score":20,"tags":["a","b"]}}`, id, i)
		var started struct {
			RunID  string `json:"run_id"`
			Status string `json:"status"`
		}
		if !s.do(ctx, hc, t, classStart, "POST", "/v1/runs?wait=30s", body, &started) {
			continue
		}
		if started.Status == "succeeded" {
			s.finished++
		} else {
			s.fail(classStart, fmt.Sprintf("run %s is %s", started.RunID, started.Status))
		}
		s.do(ctx, hc, t, classRun, "GET", "/v1/runs/"+started.RunID, "", nil)
		if i%4 == 0 {
			s.do(ctx, hc, t, classList, "GET", "/v1/runs?limit=20", "", nil)
			s.do(ctx, hc, t, classInbox, "GET", "/v1/approvals", "", nil)
		}
		if (i+id)%sseEvery == 0 {
			s.sse(ctx, hc, t, started.RunID)
		}
	}
}

func (s *stats) fail(class, why string) {
	s.errs[class]++
	if s.firstErr == "" {
		s.firstErr = class + ": " + why
	}
}

// do sends one request and records its latency (errors: a transport
// error or a status other than 200/202).
func (s *stats) do(ctx context.Context, hc *http.Client, t target, class, method, path, body string, into any) bool {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.base+path, rd)
	if err != nil {
		s.fail(class, err.Error())
		return false
	}
	req.Header.Set("Authorization", "Bearer "+t.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	begin := time.Now()
	res, err := hc.Do(req)
	if err != nil {
		s.fail(class, err.Error())
		return false
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	s.lat[class] = append(s.lat[class], time.Since(begin))
	if err != nil || res.StatusCode != http.StatusOK && res.StatusCode != http.StatusAccepted {
		s.fail(class, fmt.Sprintf("%s %s: %d %s", method, path, res.StatusCode, bytes.TrimSpace(b)))
		return false
	}
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			s.fail(class, err.Error())
			return false
		}
	}
	return true
}

// sse follows a run's event stream until its end event; the latency is
// the whole stream's.
func (s *stats) sse(ctx context.Context, hc *http.Client, t target, runID string) {
	req, err := http.NewRequestWithContext(ctx, "GET", t.base+"/v1/runs/"+runID+"/events", nil)
	if err != nil {
		s.fail(classSSE, err.Error())
		return
	}
	req.Header.Set("Authorization", "Bearer "+t.token)
	begin := time.Now()
	res, err := hc.Do(req)
	if err != nil {
		s.fail(classSSE, err.Error())
		return
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		s.fail(classSSE, fmt.Sprintf("events of %s: %d", runID, res.StatusCode))
		return
	}
	sc := bufio.NewScanner(res.Body)
	ended := false
	for sc.Scan() {
		if sc.Text() == "event: end" {
			ended = true
			break
		}
	}
	s.lat[classSSE] = append(s.lat[classSSE], time.Since(begin))
	if !ended {
		s.fail(classSSE, "the stream of "+runID+" ended without its end event")
	}
}

// gauges are what /metrics says of the server process.
type gauges struct{ goroutines, heapInuse, rss float64 }

// scrape reads the server's goroutines and memory from /metrics.
func scrape(ctx context.Context, hc *http.Client, t target) (gauges, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", t.base+"/metrics", nil)
	if err != nil {
		return gauges{}, err
	}
	req.Header.Set("Authorization", "Bearer "+t.admin)
	res, err := hc.Do(req)
	if err != nil {
		return gauges{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return gauges{}, fmt.Errorf("status %d", res.StatusCode)
	}
	var g gauges
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_goroutines":
			g.goroutines = v
		case "go_memstats_heap_inuse_bytes":
			g.heapInuse = v
		case "process_resident_memory_bytes":
			g.rss = v
		}
	}
	return g, sc.Err()
}

// report is the load test's outcome.
type report struct {
	store         string
	clients       int
	duration      time.Duration
	elapsed       time.Duration
	before, after gauges
	lat           map[string][]time.Duration
	errs          map[string]int
	finished      int
	firstErr      string
}

func pct(ls []time.Duration, p float64) time.Duration {
	if len(ls) == 0 {
		return 0
	}
	i := int(float64(len(ls)-1) * p)
	return ls[i]
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) }

func (r *report) print(w io.Writer) {
	total, errs := 0, 0
	fmt.Fprintf(w, "store %s, %d clients, %s (ran %s)\n\n", r.store, r.clients, r.duration, r.elapsed.Round(time.Millisecond))
	fmt.Fprintln(w, "| route class | requests | requests/s | p50 ms | p99 ms | errors |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, c := range classes {
		ls := r.lat[c]
		slices.Sort(ls)
		total += len(ls)
		errs += r.errs[c]
		fmt.Fprintf(w, "| %s | %d | %.0f | %s | %s | %d |\n", c, len(ls), float64(len(ls))/r.elapsed.Seconds(), ms(pct(ls, 0.5)), ms(pct(ls, 0.99)), r.errs[c])
	}
	rate := 0.0
	if total > 0 {
		rate = float64(errs) / float64(total)
	}
	fmt.Fprintf(w, "| all | %d | %.0f | | | %d (%.3f %%) |\n\n", total, float64(total)/r.elapsed.Seconds(), errs, 100*rate)
	fmt.Fprintf(w, "W5 runs started and finished: %d, %.0f/s\n", r.finished, float64(r.finished)/r.elapsed.Seconds())
	fmt.Fprintf(w, "server goroutines %.0f → %.0f, heap in use %.1f → %.1f MiB, RSS %.1f → %.1f MiB\n",
		r.before.goroutines, r.after.goroutines, r.before.heapInuse/(1<<20), r.after.heapInuse/(1<<20), r.before.rss/(1<<20), r.after.rss/(1<<20))
	if r.firstErr != "" {
		fmt.Fprintf(w, "first error: %s\n", r.firstErr)
	}
}
