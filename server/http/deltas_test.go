package http_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/reinhq/rein/trace"
)

// sseEvent is one event of a stream: its id line (empty for none), kind
// and data.
type sseEvent struct {
	id, kind, data string
}

// readSSE sends each event of an open stream to out, until the stream ends.
func readSSE(res *http.Response, out chan<- sseEvent) {
	defer close(out)
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.kind != "" {
				out <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			ev.kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if ev.data != "" {
				ev.data += "\n"
			}
			ev.data += strings.TrimPrefix(line, "data: ")
		}
	}
}

// A stream open while an agent's model writes carries its text as delta
// events (no id: they are not journaled), beside the journal's events;
// the stream of a finished run replays the journal only.
func TestEventsCarryDeltas(t *testing.T) {
	e := newEnv(t, envOpts{dirs: []string{"../../examples/support-agent"}})
	s := e.start("", map[string]any{"agent": "support", "task": "I was charged twice for order 1042"})
	if s.Status != "waiting" {
		t.Fatalf("the support agent is %s, want waiting", s.Status)
	}
	req, err := http.NewRequestWithContext(t.Context(), "GET", e.ts.URL+"/v1/runs/"+s.RunID+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	evs := make(chan sseEvent, 64)
	go readSSE(res, evs)
	// the first event is written after the stream subscribed to the deltas
	if first, ok := <-evs; !ok || first.kind != "run_started" {
		t.Fatalf("first event %+v", first)
	}
	var inbox struct {
		Approvals []struct {
			StepID string `json:"step_id"`
		} `json:"approvals"`
	}
	e.do("GET", "/v1/approvals", "", nil).json(t, &inbox)
	if len(inbox.Approvals) != 1 {
		t.Fatalf("inbox %+v", inbox)
	}
	if r := e.do("POST", "/v1/runs/"+s.RunID+"/decisions", "", map[string]any{"step": inbox.Approvals[0].StepID, "decision": "approve"}); r.status != 200 {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	var text strings.Builder
	var kinds []string
	for ev := range evs {
		kinds = append(kinds, ev.kind)
		if ev.kind != "delta" {
			continue
		}
		if ev.id != "" {
			t.Errorf("a delta with id %s: deltas are not journaled", ev.id)
		}
		var d trace.Delta
		if err := json.Unmarshal([]byte(ev.data), &d); err != nil {
			t.Fatalf("delta data %q: %v", ev.data, err)
		}
		if d.RunID != s.RunID || d.StepID != "agent" || d.Decision != "agent" || d.Turn != 3 {
			t.Errorf("delta %+v is not the agent's third turn of run %s", d, s.RunID)
		}
		text.WriteString(d.Text)
	}
	if want := "You were charged twice for order 1042; I refunded the duplicate charge of 59.90 EUR (ch_2). It reaches your card in 3-5 days."; text.String() != want {
		t.Errorf("streamed text %q, want %q (kinds %v)", text.String(), want, kinds)
	}
	if len(kinds) == 0 || kinds[len(kinds)-1] != "end" {
		t.Errorf("stream kinds %v do not end with end", kinds)
	}
	_, replay := sse(t, e.do("GET", "/v1/runs/"+s.RunID+"/events", "", nil).body)
	if contains(replay, "delta") {
		t.Errorf("the replayed stream carries deltas: %v", replay)
	}
}
