package http

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/reinhq/rein/trace"
)

// keepAlive is how often an idle event stream gets a comment line, so
// proxies keep it open; slowClient is how long one write to the stream may
// take before the stream is dropped (a client that stops reading).
const (
	keepAlive  = 15 * time.Second
	slowClient = 30 * time.Second
)

// events streams a run's journal events (text/event-stream): each event
// as it is committed, with id: its sequence number, event: its kind and
// data: its JSON. Last-Event-ID (or ?after=) resumes after that number;
// one that is not a number, or past the run's last event, is a 400: the
// stream never skips or invents events. The stream ends after the events
// of a finished run (event: end).
//
// With Options.Deltas, the stream also carries the model text of the run
// as this process streams it (event: delta, data: a trace.Delta, no id:
// deltas are not journaled, so they are neither resumed nor replayed),
// from the moment the client connects.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	run, err := s.run(r)
	if err != nil {
		writeProblem(w, err)
		return
	}
	after, err := lastEventID(r, run.LastSeq)
	if err != nil {
		writeProblem(w, err)
		return
	}
	deltas, rc, stop := s.openStream(w, run.ID)
	defer stop()
	ctx := r.Context()
	st := s.c.Store()
	tick := time.NewTicker(s.o.Poll)
	defer tick.Stop()
	idle := time.Now()
	for {
		// the deltas already handed out were streamed before the events
		// about to be read were committed (a reply streams, then its turn
		// commits): they go first, and none is left behind at the end.
		if !drainDeltas(deltas, func(d trace.Delta) bool { return writeDelta(w, rc, d) }) {
			return
		}
		// the run's status is read before its events: a run finished then
		// has committed every event the read below returns.
		cur, err := st.GetRun(ctx, run.ID)
		if err != nil {
			return
		}
		evs, err := st.Events(ctx, run.ID, after, 256)
		if err != nil {
			fmt.Fprintf(w, "event: error\ndata: %s\n\n", jsonString(map[string]string{"message": err.Error()}))
			_ = rc.Flush()
			return
		}
		if len(evs) > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(slowClient))
		}
		for _, e := range evs {
			if err := writeEvent(w, e); err != nil {
				return
			}
			after = e.Seq
		}
		if len(evs) > 0 {
			idle = time.Now()
			if err := rc.Flush(); err != nil {
				return
			}
		}
		if len(evs) == 256 {
			continue
		}
		if cur.Finished() && after >= cur.LastSeq {
			fmt.Fprintf(w, "event: end\ndata: %s\n\n", jsonString(map[string]any{"run_id": cur.ID, "status": cur.Status}))
			_ = rc.Flush()
			return
		}
		if time.Since(idle) >= keepAlive {
			_ = rc.SetWriteDeadline(time.Now().Add(slowClient))
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return
			}
			idle = time.Now()
		}
		if !s.waitEvents(ctx, w, rc, tick.C, deltas) {
			return
		}
	}
}

// waitEvents writes the deltas that arrive until the next poll (true), or
// returns false when the stream is to end: the client left, the server
// stops, or a write failed.
func (s *Server) waitEvents(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, tick <-chan time.Time, deltas <-chan trace.Delta) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-s.done:
			return false
		case <-tick:
			return true
		case d := <-deltas:
			if !writeDelta(w, rc, d) {
				return false
			}
		}
	}
}

// openStream subscribes to the deltas of run — before the stream opens,
// so a client that sees it open gets every delta from then on — and opens
// an event stream on w. The caller calls stop when the stream ends.
func (s *Server) openStream(w http.ResponseWriter, run string) (deltas <-chan trace.Delta, rc *http.ResponseController, stop func()) {
	stop = func() {}
	if s.o.Deltas != nil {
		deltas, stop = s.o.Deltas.Subscribe(run)
	}
	rc = http.NewResponseController(w)
	// the server's write timeout would end a long stream: each write gets
	// its own deadline instead.
	_ = rc.SetWriteDeadline(time.Now().Add(slowClient))
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return deltas, rc, stop
}

// drainDeltas writes, with write, the deltas waiting in deltas without
// waiting for more; false when a write failed.
func drainDeltas(deltas <-chan trace.Delta, write func(trace.Delta) bool) bool {
	for {
		select {
		case d := <-deltas:
			if !write(d) {
				return false
			}
		default:
			return true
		}
	}
}

func writeDelta(w http.ResponseWriter, rc *http.ResponseController, d trace.Delta) bool {
	_ = rc.SetWriteDeadline(time.Now().Add(slowClient))
	_, err := fmt.Fprintf(w, "event: delta\ndata: %s\n\n", jsonString(d))
	return err == nil && rc.Flush() == nil
}

func writeEvent(w http.ResponseWriter, e *trace.Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Kind, b)
	return err
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// lastEventID is where a stream resumes: Last-Event-ID, else ?after=,
// else 0; a value that is not a sequence number of the run is refused.
func lastEventID(r *http.Request, last int64) (int64, error) {
	raw, src := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if raw == "" {
		raw, src = r.URL.Query().Get("after"), "?after="
	}
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		return 0, requestErr("", "%s %q is not an event id of this stream (a sequence number)", src, raw)
	}
	if n > last {
		return 0, requestErr("", "%s %d is past the run's last event (%d): this stream never sent it", src, n, last)
	}
	return n, nil
}
