package httperr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/redact"
)

// API is the provider API whose calls fail: what its errors name and what
// they must not show. An API is not changed by its methods and is safe for
// concurrent use.
type API struct {
	// Name prefixes every message, e.g. "openai".
	Name string
	// Host is the server the calls go to, named when the deadline passes.
	Host string
	// BaseURL is the API root, named when a model is not found.
	BaseURL string
	// Key is the API key; it is redacted from every message.
	Key string
	// KeyEnv is the environment variable the key was read from, named when
	// the server refuses the key.
	KeyEnv string
	// RequestIDHeader is the response header holding the server's request
	// id, quoted in a status error (e.g. "X-Request-Id"). Empty quotes none.
	RequestIDHeader string
}

// Fail classes the failure of a call asking model: ctx's error when ctx is
// done (transient for a passed deadline, wrapping ctx's error for a
// cancellation),
// else a status error when resp is an HTTP error answer, else err as a
// transient error (connection refused or reset, TLS, a body that is not a
// reply). err's text is kept, redacted; err itself is not wrapped.
func (a *API) Fail(ctx context.Context, model string, resp *http.Response, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return fault.TransientErr(fmt.Errorf("%s: %s: no reply from %s before the deadline: %w", a.Name, model, a.Host, cerr))
		}
		return fmt.Errorf("%s: %s: call cancelled: %w", a.Name, model, cerr)
	}
	if resp != nil && resp.StatusCode >= 400 {
		return a.Status(model, resp)
	}
	return fault.TransientErr(errors.New(a.Redact(fmt.Sprintf("%s: %s: %v", a.Name, model, err))))
}

// Status classes an HTTP error answer to a call asking model: 408, 429 and
// 5xx (Anthropic's 529 "overloaded" among them) transient, with the wait
// Retry-After asks for; other 4xx business. It reads at most 64 KiB of
// resp.Body for the server's message and does not close it; the error
// carries that body, redacted, as its detail (fault.DetailResponseBody)
// for the trace's cause chain.
func (a *API) Status(model string, resp *http.Response) error {
	var body []byte
	if resp.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	}
	code := resp.StatusCode
	msg := fmt.Sprintf("%s: %s: %d %s", a.Name, model, code, http.StatusText(code))
	if detail := Message(body); detail != "" {
		msg += ": " + detail
	}
	class := fault.Business
	switch {
	case code == http.StatusUnauthorized:
		msg += fmt.Sprintf("; the server refused the API key: set %s to a valid key", a.KeyEnv)
	case code == http.StatusForbidden:
		msg += fmt.Sprintf("; the key in %s may not use this model or endpoint", a.KeyEnv)
	case code == http.StatusNotFound:
		msg += fmt.Sprintf("; check the model name %q and base_url %s", model, a.BaseURL)
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests, code >= 500:
		class = fault.Transient
	}
	if a.RequestIDHeader != "" {
		if id := resp.Header.Get(a.RequestIDHeader); id != "" {
			msg += " (request-id " + id + ")"
		}
	}
	err := fault.WithDetail(fault.New(class, errors.New(a.Redact(msg))), fault.DetailResponseBody, a.Redact(string(body)))
	if class == fault.Transient {
		err = fault.WithRetryAfter(err, RetryAfter(resp.Header, time.Now()))
	}
	return err
}

// Redact returns text with the API key hidden in every encoding package
// redact knows (as is, in any case, %-escaped, JSON-escaped, base64), and
// credential-shaped strings too. Keys shorter than redact.MinLen are left
// alone (replacing them would garble every message, and a key that short
// protects nothing).
func (a *API) Redact(text string) string {
	return redact.New(a.Key).String(text)
}

// Message finds the human message in an error body: OpenAI's and
// Anthropic's {"error": {"message": …}}, vLLM's or a proxy's
// {"message": …}, LM Studio's {"error": "…"}, FastAPI's {"detail": "…"};
// else the body itself when it is short text (at most 300 bytes, not
// markup) or, when it is JSON, its first 300 bytes. Empty when there is
// nothing to show.
func Message(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	text := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &v) != nil {
		if len(text) > 300 || strings.HasPrefix(text, "<") {
			return ""
		}
		return text
	}
	var inner struct {
		Message string `json:"message"`
	}
	var s string
	switch {
	case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
		return inner.Message
	case json.Unmarshal(v.Error, &s) == nil && s != "":
		return s
	case v.Message != "":
		return v.Message
	case json.Unmarshal(v.Detail, &s) == nil && s != "":
		return s
	}
	if len(text) > 300 {
		text = text[:300] + "…"
	}
	return text
}

// RetryAfter reads the wait a server asked for at now: retry-after-ms,
// else Retry-After in seconds or as an HTTP date. Zero when there is none,
// it is not positive or the date has passed.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
