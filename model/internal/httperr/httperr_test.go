package httperr_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model/internal/httperr"
)

var api = &httperr.API{
	Name:            "acme",
	Host:            "api.acme.test",
	BaseURL:         "https://api.acme.test/v1",
	Key:             "sk-secret-key",
	KeyEnv:          "ACME_API_KEY",
	RequestIDHeader: "X-Request-Id",
}

func answer(code int, body string, header map[string]string) *http.Response {
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader(body))}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		resp   *http.Response
		class  fault.Class
		wait   time.Duration
		want   []string
		absent []string
	}{
		{"401 names the key's variable", answer(401, `{"error":{"message":"bad key sk-secret-key"}}`, nil), fault.Business, 0,
			[]string{"acme: m: 401 Unauthorized: bad key [REDACTED]", "set ACME_API_KEY to a valid key"}, []string{"sk-secret-key"}},
		{"403", answer(403, `{"error":"forbidden"}`, nil), fault.Business, 0,
			[]string{"403 Forbidden: forbidden", "the key in ACME_API_KEY may not use"}, nil},
		{"404 names model and base_url", answer(404, `{"detail":"no such model"}`, nil), fault.Business, 0,
			[]string{"no such model", `check the model name "m" and base_url https://api.acme.test/v1`}, nil},
		{"400", answer(400, `{"message":"bad field"}`, nil), fault.Business, 0, []string{"400 Bad Request: bad field"}, nil},
		{"408", answer(408, ``, nil), fault.Transient, 0, []string{"408 Request Timeout"}, nil},
		{"429 with Retry-After and request id", answer(429, `{"error":{"message":"slow down"}}`, map[string]string{"Retry-After": "3", "X-Request-Id": "req-7"}),
			fault.Transient, 3 * time.Second, []string{"429 Too Many Requests: slow down (request-id req-7)"}, nil},
		{"529 overloaded", answer(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, nil), fault.Transient, 0,
			[]string{"529 : Overloaded"}, nil},
		{"502 html", answer(502, `<html>Bad Gateway</html>`, nil), fault.Transient, 0, []string{"acme: m: 502 Bad Gateway"}, []string{"html"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, _ := io.ReadAll(tt.resp.Body)
			tt.resp.Body = io.NopCloser(strings.NewReader(string(b)))
			err := api.Status("m", tt.resp)
			if got := fault.ClassOf(err); got != tt.class {
				t.Errorf("class %s, want %s (%v)", got, tt.class, err)
			}
			if got := fault.RetryAfterOf(err); got != tt.wait {
				t.Errorf("retry after %v, want %v", got, tt.wait)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not hold %q", err, w)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(err.Error(), a) {
					t.Errorf("error %q holds %q", err, a)
				}
			}
			// the body, redacted, is the error's detail (for the trace's cause chain)
			kind, body := fault.DetailOf(err)
			if raw := string(b); raw != "" && (kind != fault.DetailResponseBody || body != strings.ReplaceAll(raw, api.Key, "[REDACTED]")) {
				t.Errorf("detail %s %q, want the body %q redacted", kind, body, raw)
			}
			if strings.Contains(body, api.Key) {
				t.Errorf("detail %q holds the key", body)
			}
		})
	}
}

func TestStatusWithoutRequestIDHeader(t *testing.T) {
	t.Parallel()
	a := *api
	a.RequestIDHeader = ""
	err := a.Status("m", answer(500, ``, map[string]string{"X-Request-Id": "req-7"}))
	if strings.Contains(err.Error(), "req-7") {
		t.Errorf("error %q quotes a request id no header was named for", err)
	}
}

func TestFail(t *testing.T) {
	t.Parallel()
	expired, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	tests := []struct {
		name  string
		ctx   context.Context
		resp  *http.Response
		err   error
		class fault.Class
		want  string
	}{
		{"deadline", expired, nil, errors.New("x"), fault.Transient, "acme: m: no reply from api.acme.test before the deadline"},
		{"cancelled", cancelled, nil, errors.New("x"), fault.Cancelled, "acme: m: call cancelled"},
		{"status", context.Background(), answer(503, ``, nil), errors.New("x"), fault.Transient, "acme: m: 503 Service Unavailable"},
		{"network", context.Background(), nil, errors.New("dial tcp: refused, key sk-secret-key"), fault.Transient, "acme: m: dial tcp: refused, key [REDACTED]"},
		{"a 2xx body that is no reply", context.Background(), answer(200, `{}`, nil), errors.New("bad json"), fault.Transient, "acme: m: bad json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := api.Fail(tt.ctx, "m", tt.resp, tt.err)
			if got := fault.ClassOf(err); got != tt.class {
				t.Errorf("class %q, want %q (%v)", got, tt.class, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not hold %q", err, tt.want)
			}
			if errors.Is(err, tt.err) {
				t.Errorf("error %v keeps the SDK's error in its chain", err)
			}
		})
	}
}

func TestMessage(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 301)
	tests := []struct {
		name, body, want string
	}{
		{"openai", `{"error":{"message":"bad"}}`, "bad"},
		{"anthropic", `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`, "bad"},
		{"lmstudio", `{"error":"bad"}`, "bad"},
		{"vllm", `{"object":"error","message":"bad"}`, "bad"},
		{"fastapi", `{"detail":"bad"}`, "bad"},
		{"other json", `{"code":7}`, `{"code":7}`},
		{"long json", `{"x":"` + long + `"}`, (`{"x":"` + long)[:300] + "…"},
		{"text", "  upstream down \n", "upstream down"},
		{"long text", long, ""},
		{"markup", "<html>502</html>", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := httperr.Message([]byte(tt.body)); got != tt.want {
				t.Errorf("Message(%q) = %q, want %q", tt.body, got, tt.want)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header map[string]string
		want   time.Duration
	}{
		{map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{map[string]string{"Retry-After": "Sat, 01 Mar 2025 12:00:30 GMT"}, 30 * time.Second},
		{map[string]string{"Retry-After": "Sat, 01 Mar 2025 11:00:00 GMT"}, 0},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "7"}, 250 * time.Millisecond},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After": "-3"}, 0},
		{nil, 0},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		if got := httperr.RetryAfter(h, now); got != tt.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestRedactShortKey(t *testing.T) {
	t.Parallel()
	a := &httperr.API{Key: "abc"}
	if got := a.Redact("abc def"); got != "abc def" {
		t.Errorf("short key redacted: %q", got)
	}
	a.Key = "sk-long-key"
	if got := a.Redact("bad key sk-long-key!"); got != "bad key [REDACTED]!" {
		t.Errorf("Redact = %q", got)
	}
}
