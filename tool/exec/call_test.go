//go:build linux

package exec

import (
	"context"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/tool"
)

func TestCallOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		args   any
		edit   func(*Config)
		want   any
		class  fault.Class // Unclassified: success
		substr []string    // the error message must contain each
	}{
		{name: "args echoed from stdin", body: "exec cat", args: map[string]any{"a": 1, "b": []any{true, "x"}}, want: map[string]any{"a": 1.0, "b": []any{true, "x"}}},
		{name: "nil args are null", body: "exec cat", args: nil, want: nil},
		{name: "whitespace around the value", body: `printf '\n  42 \n'`, want: 42.0},
		{name: "big args, stdin never read", body: `echo '"ok"'`, args: strings.Repeat("x", 1<<20), want: "ok"},
		{name: "exit 75 is transient", body: "echo 'rate limited' >&2; exit 75", class: fault.Transient, substr: []string{"tool t:", "exit code 75", "rate limited"}},
		{name: "exit 3 is business with stderr", body: "echo '{}'; echo 'bad customer id' >&2; exit 3", class: fault.Business, substr: []string{"tool t:", "exit code 3", "stderr: bad customer id"}},
		{name: "exit 1, empty stderr", body: "exit 1", class: fault.Business, substr: []string{"exit code 1", "(nothing on stderr)"}},
		{name: "killed by a signal", body: "kill -TERM $$", class: fault.Business, substr: []string{"terminated", "signal: terminated"}},
		{name: "stdout not JSON", body: "echo hello world", class: fault.Business, substr: []string{"tool t: stdout is not JSON", `"hello world\n"`}},
		{name: "two JSON values", body: `echo '{"a":1} {"b":2}'`, class: fault.Business, substr: []string{"more than one JSON value", "byte 8", `"{\"b\":2}\n"`}},
		{name: "trailing text", body: `echo '123abc'`, class: fault.Business, substr: []string{"more than one JSON value", `"abc\n"`}},
		{name: "no stdout", body: "true", class: fault.Business, substr: []string{"printed nothing on stdout"}},
		{name: "long bad stdout is quoted short", body: `printf 'é%.0s' $(seq 500)`, class: fault.Business, substr: []string{"stdout is not JSON", `…`}},
		{name: "5 MB capped at the default", body: "yes | head -c 5000000", class: fault.Business, substr: []string{"tool t: output exceeds 1048576 bytes"}},
		{name: "endless output capped and killed", body: "exec yes", edit: func(c *Config) { c.MaxOutputBytes = 1000 }, class: fault.Business, substr: []string{"output exceeds 1000 bytes"}},
		{name: "output just under the cap", body: `printf '"%s"' abcdefgh`, edit: func(c *Config) { c.MaxOutputBytes = 10 }, want: "abcdefgh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := scriptTool(t, tt.body, tt.edit)
			got, err := tl.Call(context.Background(), tt.args)
			if tt.class == fault.Unclassified {
				if err != nil {
					t.Fatalf("Call: %v", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got %#v, want %#v", got, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Call = %#v, want a %s error", got, tt.class)
			}
			if c := fault.ClassOf(err); c != tt.class {
				t.Errorf("class %q, want %q: %v", c, tt.class, err)
			}
			for _, s := range tt.substr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if len(err.Error()) > 3000 || !utf8.ValidString(err.Error()) {
				t.Errorf("error is %d bytes or not UTF-8: %q", len(err.Error()), err)
			}
		})
	}
}

func TestCallStderrTail(t *testing.T) {
	t.Parallel()
	// 10,000 bytes of two-byte runes, then the line that matters.
	tl := scriptTool(t, `printf 'é%.0s' $(seq 5000) >&2; echo; echo 'fatal: disk full' >&2; exit 4`, nil)
	_, err := tl.Call(context.Background(), nil)
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	if !strings.HasSuffix(msg, "fatal: disk full") || !strings.Contains(msg, "stderr: …é") {
		t.Errorf("error should quote the tail of stderr, marked as cut: %.120q…%q", msg, msg[max(0, len(msg)-40):])
	}
	if len(msg) > stderrKeep+200 || !utf8.ValidString(msg) || strings.ContainsRune(msg, utf8.RuneError) {
		t.Errorf("stderr quote is %d bytes, valid UTF-8 %v", len(msg), utf8.ValidString(msg))
	}
}

func TestCallEnvironment(t *testing.T) {
	t.Parallel()
	body := `printf '{"run":"%s","step":"%s","attempt":"%s","key":"%s","greeting":"%s","path":"%s","pwd":"%s"}' ` +
		`"$REIN_RUN_ID" "$REIN_STEP_ID" "$REIN_ATTEMPT" "$REIN_IDEMPOTENCY_KEY" "$GREETING" "$PATH" "$(pwd -P)"`
	tl := scriptTool(t, body, func(c *Config) { c.Env = map[string]string{"GREETING": "hi there"} })
	tests := []struct {
		name string
		ctx  context.Context
		want map[string]any
	}{
		{
			name: "in a run",
			ctx:  tool.WithCallInfo(context.Background(), &tool.CallInfo{RunID: "r1", StepID: "notify", Attempt: 2, IdempotencyKey: "r1/notify/2"}),
			want: map[string]any{"run": "r1", "step": "notify", "attempt": "2", "key": "r1/notify/2"},
		},
		{
			name: "outside a run",
			ctx:  context.Background(),
			want: map[string]any{"run": "", "step": "", "attempt": "0", "key": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tl.Call(tt.ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			tt.want["greeting"] = "hi there"
			tt.want["path"] = os.Getenv("PATH")
			tt.want["pwd"] = evalSymlinks(t, tl.cfg.Dir)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestCallConcurrent(t *testing.T) {
	t.Parallel()
	tl := scriptTool(t, "exec cat", nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			got, err := tl.Call(context.Background(), float64(i))
			if err != nil || got != float64(i) {
				t.Errorf("call %d = %v, %v", i, got, err)
			}
		})
	}
	wg.Wait()
}
