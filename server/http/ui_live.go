package http

import (
	"bytes"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/reinhq/rein/server/http/ui"
	"github.com/reinhq/rein/trace"
)

// uiLive is the run page's Server-Sent Events stream, for htmx's SSE
// extension: "run" (the page's live part — status, graph, timeline,
// steps, transcript — drawn again each time the run's journal grows past
// ?seq=), "delta" (the model's text as it is written, escaped, appended
// by the page) and "end" once the run is finished (the page closes the
// stream). Tenant-checked as the page.
func (s *Server) uiLive(w http.ResponseWriter, r *http.Request, c *uiCaller) {
	run, f, err := s.uiRunOf(r, c)
	if err != nil {
		s.uiError(w, c, err)
		return
	}
	seen, _ := strconv.ParseInt(r.URL.Query().Get("seq"), 10, 64)
	deltas, rc, stop := s.openStream(w, run.ID)
	defer stop()
	_ = rc.Flush()
	ctx := r.Context()
	tick := time.NewTicker(s.o.Poll)
	defer tick.Stop()
	idle, lastCall := time.Now(), ""
	for {
		// deltas streamed before what is about to be read committed go
		// first, and none is left behind when the run ends.
		if !drainDeltas(deltas, func(d trace.Delta) bool { return writeLiveDelta(w, rc, d, &lastCall) }) {
			return
		}
		cur, err := s.c.Store().GetRun(ctx, run.ID)
		if err != nil {
			return
		}
		if cur.LastSeq != seen {
			d, err := s.runPage(ctx, c, cur, f)
			if err != nil {
				return
			}
			var b bytes.Buffer
			if err := ui.Render(&b, "live.html", d); err != nil {
				s.o.Logf("%v", err)
				return
			}
			_ = rc.SetWriteDeadline(time.Now().Add(slowClient))
			if writeSSE(w, "run", b.String()) != nil || rc.Flush() != nil {
				return
			}
			seen, idle = cur.LastSeq, time.Now()
		}
		if cur.Finished() {
			_ = writeSSE(w, "end", cur.ID)
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
		if !s.waitLive(r, w, rc, tick.C, deltas, &lastCall) {
			return
		}
	}
}

// waitLive writes the deltas that arrive until the next poll (true), or
// returns false when the stream is to end.
//
// The page appends the deltas to one element that the redraws leave
// alone; last is the call of the previous delta, and a delta of another
// call starts a new paragraph.
func (s *Server) waitLive(r *http.Request, w http.ResponseWriter, rc *http.ResponseController, tick <-chan time.Time, deltas <-chan trace.Delta, last *string) bool {
	for {
		select {
		case <-r.Context().Done():
			return false
		case <-s.done:
			return false
		case <-tick:
			return true
		case d := <-deltas:
			if !writeLiveDelta(w, rc, d, last) {
				return false
			}
		}
	}
}

// writeLiveDelta writes d for the page (see waitLive); false when the
// write failed.
func writeLiveDelta(w http.ResponseWriter, rc *http.ResponseController, d trace.Delta, last *string) bool {
	text := d.Text
	call := fmt.Sprintf("%s/%d/%d/%s", d.StepID, d.Attempt, d.Turn, d.Decision)
	switch {
	case d.Reset:
		text = "\n[the model call failed; it is asked again]\n"
	case *last != "" && *last != call:
		text = "\n\n" + text // another call: a new paragraph
	}
	*last = call
	if text == "" {
		return true
	}
	_ = rc.SetWriteDeadline(time.Now().Add(slowClient))
	return writeSSE(w, "delta", html.EscapeString(text)) == nil && rc.Flush() == nil
}

// writeSSE writes one event whose data may span lines (one data: line
// each; the client joins them with newlines).
func writeSSE(w http.ResponseWriter, event, data string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "event: %s\n", event)
	for _, line := range strings.Split(strings.ReplaceAll(data, "\r", ""), "\n") {
		fmt.Fprintf(&b, "data: %s\n", line)
	}
	b.WriteString("\n")
	_, err := fmt.Fprint(w, b.String())
	return err
}
