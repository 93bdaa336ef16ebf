package rein_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/postgres"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

const retryLibFlow = `name: retry_lib
steps:
  - {id: charge, tool: charge, args: {}}
  - {id: notify, tool: notify, args: {}, retries: 0}
`

// retryTools: charge (an effect, not idempotent) and notify, which fails
// with a transient error while down is set; both note their keys.
type retryTools struct {
	mu   sync.Mutex
	keys []string
	down atomic.Bool
}

func (rt *retryTools) tools() []tool.Tool {
	note := func(ctx context.Context) {
		info := tool.CallInfoFrom(ctx)
		rt.mu.Lock()
		rt.keys = append(rt.keys, strings.TrimPrefix(info.IdempotencyKey, info.RunID+"/"))
		rt.mu.Unlock()
	}
	return []tool.Tool{
		tool.Func(tool.Spec{Name: "charge", Effect: tool.EffectExternal}, func(ctx context.Context, _ any) (any, error) {
			note(ctx)
			return map[string]any{"ok": true}, nil
		}),
		tool.Func(tool.Spec{Name: "notify", Effect: tool.EffectExternal}, func(ctx context.Context, _ any) (any, error) {
			note(ctx)
			if rt.down.Load() {
				return nil, fault.Errorf(fault.Transient, "the mail server is down")
			}
			return map[string]any{"sent": true}, nil
		}),
	}
}

// testRetry: a run that failed on a transient error after its effect is
// retried by Client.Retry: same run, charge made once, notify at attempt
// 2; a second Retry is refused with HintNotFailed, a From the flow lacks
// with a suggestion.
func testRetry(t *testing.T, st store.Store) {
	ctx := context.Background()
	rt := &retryTools{}
	rt.down.Store(true)
	tools := rt.tools()
	c, err := rein.Open(ctx, rein.Config{Store: st, Load: &project.LoadOptions{Tools: tools}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := project.Load(writeFlowDir(t, retryLibFlow), &project.LoadOptions{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	id := "retry-" + hex.EncodeToString(rnd[:])
	res, err := c.Start(ctx, p, nil, &rein.RunOptions{RunID: id})
	if err != nil || res.Status != trace.RunFailed {
		t.Fatalf("start: %v %+v", err, res)
	}
	_, err = c.Retry(ctx, id, &rein.RetryOptions{From: "notfy"})
	if fault.ClassOf(err) != fault.NotFound || !strings.Contains(err.Error(), `did you mean "notify"`) {
		t.Fatalf("retry from an unknown step: %v", err)
	}
	rt.down.Store(false)
	out, err := c.Retry(ctx, id, nil)
	if err != nil || out.Result.Status != trace.RunSucceeded || out.Result.RunID != id {
		t.Fatalf("retry: %v %+v", err, out)
	}
	if got := strings.Join(rt.keys, " "); got != "charge/1 notify/1 notify/2" {
		t.Fatalf("calls %s: want charge once, notify again at attempt 2", got)
	}
	_, err = c.Retry(ctx, id, nil)
	if h := fault.HintOf(err); h.Code != fault.HintNotFailed || h.Status != "succeeded" {
		t.Fatalf("retry of a succeeded run: %v (hint %+v)", err, h)
	}
}

func TestRetrySQLite(t *testing.T) {
	t.Parallel()
	st, err := openStore(context.Background(), filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	testRetry(t, st)
}

func TestRetryPostgres(t *testing.T) {
	t.Parallel()
	dsn := pgDSN(t)
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	st, err := postgres.Open(context.Background(), dsn, &postgres.Options{Schema: "rein_retry_" + hex.EncodeToString(rnd[:])})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	testRetry(t, st)
}
