package anthropic

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
)

// fail classes a failed call. The SDK's error is not kept in the chain: it
// holds the request, and the request holds the key.
func (m *Model) fail(ctx context.Context, name string, resp *http.Response, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return fault.TransientErr(fmt.Errorf("anthropic: %s: no reply from %s before the deadline: %w", name, m.host, cerr))
		}
		return fmt.Errorf("anthropic: %s: call cancelled: %w", name, cerr)
	}
	if resp != nil && resp.StatusCode >= 400 {
		return m.statusErr(name, resp)
	}
	// Connection refused or reset, TLS, a body that is not a message.
	return fault.TransientErr(errors.New(m.redact(fmt.Sprintf("anthropic: %s: %v", name, err))))
}

// statusErr classes an HTTP error answer: 408, 429 and 5xx transient (with
// Retry-After), other 4xx business.
func (m *Model) statusErr(name string, resp *http.Response) error {
	var body []byte
	if resp.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	}
	code := resp.StatusCode
	msg := fmt.Sprintf("anthropic: %s: %d %s", name, code, http.StatusText(code))
	if detail := errorMessage(body); detail != "" {
		msg += ": " + detail
	}
	class := fault.Business
	switch {
	case code == http.StatusUnauthorized:
		msg += fmt.Sprintf("; the server refused the API key: set %s to a valid key", m.cfg.APIKeyEnv)
	case code == http.StatusForbidden:
		msg += fmt.Sprintf("; the key in %s may not use this model or endpoint", m.cfg.APIKeyEnv)
	case code == http.StatusNotFound:
		msg += fmt.Sprintf("; check the model name %q and base_url %s", name, m.cfg.BaseURL)
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests, code >= 500: // 529: overloaded
		class = fault.Transient
	}
	if id := resp.Header.Get("Request-Id"); id != "" {
		msg += " (request-id " + id + ")"
	}
	err := fault.New(class, errors.New(m.redact(msg)))
	if class == fault.Transient {
		err = fault.WithRetryAfter(err, retryAfter(resp.Header, time.Now()))
	}
	return err
}

// errorMessage finds the human message in an error body: Anthropic's
// {"type": "error", "error": {"type": …, "message": …}}, a proxy's
// {"message": …}, {"error": "…"} or {"detail": "…"}; else the body itself
// when it is short text.
func errorMessage(body []byte) string {
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

// retryAfter reads the wait a server asked for: retry-after-ms, else
// Retry-After in seconds or as an HTTP date. Zero when there is none.
func retryAfter(h http.Header, now time.Time) time.Duration {
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

// redact removes the API key from text. Keys shorter than four bytes are
// left alone (replacing them would garble every message, and a key that
// short protects nothing).
func (m *Model) redact(text string) string {
	if k := m.cfg.APIKey; len(k) >= 4 {
		text = strings.ReplaceAll(text, k, "[redacted]")
	}
	return text
}
