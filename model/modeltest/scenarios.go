package modeltest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
)

func textServer(t *testing.T, p Provider, req *model.Request) *server {
	return newServer(t, p, req, func(w http.ResponseWriter, _ []byte) { p.Wire.Text(w, reply()) })
}

func testText(t *testing.T, p Provider) {
	req := conversation()
	s := textServer(t, p, req)
	resp, err := generate(t, s.model(p), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp.Text != reply().Text {
		t.Errorf("Text %q, want %q", resp.Text, reply().Text)
	}
	if n := s.requests.Load(); n != 1 {
		t.Errorf("%d requests reached the server, want 1", n)
	}
}

func testUsage(t *testing.T, p Provider) {
	req := conversation()
	resp, err := generate(t, textServer(t, p, req).model(p), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	want := model.Usage{In: reply().In, Out: reply().Out}
	if resp.Usage != want {
		t.Errorf("Usage %+v, want %+v", resp.Usage, want)
	}
}

func testModelName(t *testing.T, p Provider) {
	req := conversation()
	resp, err := generate(t, textServer(t, p, req).model(p), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp.Model != ServedModel {
		t.Errorf("Model %q, want %q (the model the server says answered)", resp.Model, ServedModel)
	}
}

func testStructured(t *testing.T, p Provider) {
	req := structuredRequest()
	r := reply()
	r.Answer, r.Schema = Answer, Schema
	s := newServer(t, p, req, func(w http.ResponseWriter, body []byte) { p.Wire.Structured(w, body, r) })
	resp, err := generate(t, s.model(p), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if !jsonEqual([]byte(resp.Text), Answer) {
		t.Errorf("Text %s, want the answer %s (absent optional properties stay absent)", resp.Text, compact(Answer))
	}
	if resp.Usage != (model.Usage{In: r.In, Out: r.Out}) {
		t.Errorf("Usage %+v, want {In:%d Out:%d}", resp.Usage, r.In, r.Out)
	}
}

func testTruncated(t *testing.T, p Provider) {
	req := conversation()
	r := reply()
	r.Text = `{"route": "acc`
	s := newServer(t, p, req, func(w http.ResponseWriter, _ []byte) { p.Wire.Truncated(w, r) })
	resp, err := generate(t, s.model(p), req)
	wantClass(t, err, fault.Format)
	if !strings.Contains(strings.ToLower(err.Error()), "token") {
		t.Errorf("error %q does not say the token limit cut the reply off", err)
	}
	if resp != nil && resp.Usage != (model.Usage{In: r.In, Out: r.Out}) {
		t.Errorf("Usage %+v of the truncated reply, want {In:%d Out:%d} (spent tokens count)", resp.Usage, r.In, r.Out)
	}
}

func testRefusal(t *testing.T, p Provider) {
	req := conversation()
	r := reply()
	r.Text = "I can't help with that request."
	s := newServer(t, p, req, func(w http.ResponseWriter, _ []byte) { p.Wire.Refusal(w, r) })
	_, err := generate(t, s.model(p), req)
	wantClass(t, err, fault.Business)
	if !strings.Contains(err.Error(), "refus") {
		t.Errorf("error %q does not say the model refused", err)
	}
}

func errorServer(t *testing.T, p Provider, req *model.Request, status int, message string, header map[string]string) *server {
	return newServer(t, p, req, func(w http.ResponseWriter, _ []byte) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		p.Wire.Error(w, status, message)
	})
}

func testRateLimited(t *testing.T, p Provider) {
	req := conversation()
	s := errorServer(t, p, req, http.StatusTooManyRequests, "Rate limit reached for requests", map[string]string{"Retry-After": "7"})
	_, err := generate(t, s.model(p), req)
	wantClass(t, err, fault.Transient)
	if got := fault.RetryAfterOf(err); got != 7*time.Second {
		t.Errorf("RetryAfterOf = %v, want 7s (the Retry-After header)", got)
	}
	if n := s.requests.Load(); n != 1 {
		t.Errorf("%d requests reached the server, want 1 (the engine owns retries)", n)
	}
}

func testServerErrors(t *testing.T, p Provider) {
	for _, status := range []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			req := conversation()
			s := errorServer(t, p, req, status, "The server had an error while processing your request.", nil)
			_, err := generate(t, s.model(p), req)
			wantClass(t, err, fault.Transient)
			if n := s.requests.Load(); n != 1 {
				t.Errorf("%d requests reached the server, want 1 (the engine owns retries)", n)
			}
		})
	}
}

func testNetworkError(t *testing.T, p Provider) {
	s := textServer(t, p, conversation())
	url := s.URL
	s.Close()
	_, err := generate(t, p.New(url, APIKey), conversation())
	wantClass(t, err, fault.Transient)
}

func testBadRequest(t *testing.T, p Provider) {
	req := conversation()
	const msg = "Invalid value for 'temperature': must be at most 2."
	s := errorServer(t, p, req, http.StatusBadRequest, msg, nil)
	_, err := generate(t, s.model(p), req)
	wantClass(t, err, fault.Business)
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("error %q does not carry the provider's message %q", err, msg)
	}
	if n := s.requests.Load(); n != 1 {
		t.Errorf("%d requests reached the server, want 1", n)
	}
}

func testUnauthorized(t *testing.T, p Provider) {
	req := conversation()
	// Servers echo the key they refused (OpenAI masks it, not every
	// compatible server does).
	s := errorServer(t, p, req, http.StatusUnauthorized, "Incorrect API key provided: "+APIKey+".", nil)
	_, err := generate(t, s.model(p), req)
	wantClass(t, err, fault.Business)
	if !strings.Contains(err.Error(), p.KeyEnv) {
		t.Errorf("error %q does not name the variable holding the key, %s", err, p.KeyEnv)
	}
}

func hangServer(t *testing.T, p Provider, req *model.Request) *server {
	var s *server
	s = newServer(t, p, req, func(w http.ResponseWriter, _ []byte) {
		// The request's context ends when the client goes away.
		select {
		case <-s.release:
		case <-time.After(30 * time.Second):
		}
	})
	return s
}

func testHang(t *testing.T, p Provider) {
	req := conversation()
	m := hangServer(t, p, req).model(p)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.Generate(ctx, req)
	took := time.Since(start)
	noKey(t, err)
	wantClass(t, err, fault.Transient)
	if took > 2*time.Second {
		t.Errorf("Generate returned %v after the deadline passed, want promptly", took-200*time.Millisecond)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %q does not wrap context.DeadlineExceeded", err)
	}
}

func testCancelled(t *testing.T, p Provider) {
	req := conversation()
	m := hangServer(t, p, req).model(p)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := m.Generate(ctx, req)
	noKey(t, err)
	wantClass(t, err, fault.Cancelled)
}

func testKeyNeverInErrors(t *testing.T, p Provider) {
	for _, status := range []int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusTooManyRequests, http.StatusInternalServerError} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			req := conversation()
			// Servers echo the key as sent, lowercased, and %-escaped
			// (from a URL they logged).
			s := errorServer(t, p, req, status, "rejected key "+APIKey+" (Bearer "+APIKey+"), normalised "+strings.ToLower(APIKey)+
				", from ?key="+url.QueryEscape(APIKey)+" or "+strings.ToLower(url.QueryEscape(APIKey)), nil)
			_, err := generate(t, s.model(p), req)
			if err == nil {
				t.Fatal("Generate succeeded, want an error")
			}
			text := strings.ToLower(fmt.Sprintf("%v %+v %#v %s", err, err, err, err))
			for _, form := range []string{APIKey, url.QueryEscape(APIKey)} {
				if strings.Contains(text, strings.ToLower(form)) {
					t.Errorf("formatted error holds the API key as %q: %v", form, err)
				}
			}
			if strings.Contains(text, "secret+abcdef") || strings.Contains(text, "secret%2babcdef") {
				t.Errorf("formatted error holds part of the API key: %v", err)
			}
		})
	}
}

func testConcurrent(t *testing.T, p Provider) {
	req := conversation()
	m := textServer(t, p, req).model(p)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			resp, err := generate(t, m, req)
			if err != nil {
				t.Errorf("Generate: %v", err)
				return
			}
			if resp.Text != reply().Text {
				t.Errorf("Text %q, want %q", resp.Text, reply().Text)
			}
		})
	}
	wg.Wait()
}
