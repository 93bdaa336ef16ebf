package schemacache_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/reinhq/rein/model/internal/schemacache"
)

func TestGetPreparesOnce(t *testing.T) {
	t.Parallel()
	var c schemacache.Cache[string]
	calls := 0
	prepare := func(raw json.RawMessage) (*string, error) {
		calls++
		s := "prepared " + string(raw)
		return &s, nil
	}
	a, err := c.Get(json.RawMessage(`{"type":"object"}`), prepare)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Get(json.RawMessage(`{"type":"object"}`), prepare)
	if a != b || *a != `prepared {"type":"object"}` || calls != 1 {
		t.Errorf("got %p %p (%q), %d calls; want one pointer, prepared once", a, b, *a, calls)
	}
	if _, _ = c.Get(json.RawMessage(`{"type":"array"}`), prepare); calls != 2 {
		t.Errorf("another schema: %d calls, want 2", calls)
	}
}

func TestGetKeepsNeitherNilNorErrors(t *testing.T) {
	t.Parallel()
	var c schemacache.Cache[string]
	calls := 0
	fail := errors.New("bad schema")
	for _, tc := range []struct {
		raw  string
		err  error
		want error
	}{
		{`true`, nil, nil},
		{`true`, nil, nil},
		{`[`, fail, fail},
		{`[`, fail, fail},
	} {
		got, err := c.Get(json.RawMessage(tc.raw), func(json.RawMessage) (*string, error) { calls++; return nil, tc.err })
		if got != nil || !errors.Is(err, tc.want) {
			t.Errorf("Get(%s) = %v, %v; want nil, %v", tc.raw, got, err, tc.want)
		}
	}
	if calls != 4 {
		t.Errorf("%d calls, want 4: nil and errors are not kept", calls)
	}
}

func TestGetBounded(t *testing.T) {
	t.Parallel()
	var c schemacache.Cache[int]
	calls := 0
	prepare := func(json.RawMessage) (*int, error) { calls++; n := calls; return &n, nil }
	for i := range schemacache.Max + 1 {
		_, _ = c.Get(json.RawMessage(fmt.Sprint(i)), prepare)
	}
	_, _ = c.Get(json.RawMessage("0"), prepare)
	if calls != schemacache.Max+1 {
		t.Errorf("%d calls, want %d: a kept schema is not prepared again", calls, schemacache.Max+1)
	}
	_, _ = c.Get(json.RawMessage(fmt.Sprint(schemacache.Max)), prepare)
	if calls != schemacache.Max+2 {
		t.Errorf("%d calls, want %d: past the bound a schema is prepared every time", calls, schemacache.Max+2)
	}
}

func TestGetConcurrent(t *testing.T) {
	t.Parallel()
	var c schemacache.Cache[string]
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			raw := json.RawMessage(fmt.Sprint(i % 4))
			got, err := c.Get(raw, func(raw json.RawMessage) (*string, error) { s := string(raw); return &s, nil })
			if err != nil || *got != string(raw) {
				t.Errorf("Get(%s) = %v, %v", raw, *got, err)
			}
		})
	}
	wg.Wait()
}
