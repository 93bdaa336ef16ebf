package openai

import (
	"net/http"
	"testing"
	"time"
)

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
		if got := retryAfter(h, now); got != tt.want {
			t.Errorf("retryAfter(%v) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestRedactShortKey(t *testing.T) {
	t.Parallel()
	m := &Model{cfg: Config{APIKey: "abc"}}
	if got := m.redact("abc def"); got != "abc def" {
		t.Errorf("short key redacted: %q", got)
	}
	m.cfg.APIKey = "sk-long-key"
	if got := m.redact("bad key sk-long-key!"); got != "bad key [redacted]!" {
		t.Errorf("redact = %q", got)
	}
}
