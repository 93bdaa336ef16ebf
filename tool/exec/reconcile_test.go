//go:build linux

package exec

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/tool"
)

// TestCheckProtocol: the check command gets the request on stdin and the
// key in REIN_IDEMPOTENCY_KEY; its answer is happened with an output, not
// happened, or, for any other exit or answer, an error (cannot say). A
// tool without check: is no tool.Checker.
func TestCheckProtocol(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		happened   bool
		output     any
		err        string
	}{
		{"happened", `in=$(cat); case "$in" in *'"args":{"order":"o-1"}'*'"idempotency_key":"run/s/1"'*) ;; *) exit 3;; esac
[ "$REIN_IDEMPOTENCY_KEY" = run/s/1 ] || exit 4
echo '{"happened": true, "output": {"id": "r-1"}}'`, true, map[string]any{"id": "r-1"}, ""},
		{"did not happen", `cat >/dev/null; echo '{"happened": false}'`, false, nil, ""},
		{"exit 1", `cat >/dev/null; echo 'ledger unreadable' >&2; exit 1`, false, nil, "ledger unreadable"},
		{"another answer", `cat >/dev/null; echo '{"done": true}'`, false, nil, `is not {"happened": true`},
		{"happened without output", `cat >/dev/null; echo '{"happened": true}'`, false, nil, "without its output"},
		{"not happened with output", `cat >/dev/null; echo '{"happened": false, "output": 1}'`, false, nil, "say one or the other"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeScript(t, dir, "check.sh", tc.body)
			tl := scriptTool(t, `echo '{}'`, func(c *Config) { c.Check = []string{dir + "/check.sh"}; c.Effect = tool.EffectExternal })
			ck, ok := tl.Checker().(tool.Checker)
			if !ok {
				t.Fatal("a tool with check: is no tool.Checker")
			}
			ctx := tool.WithCallInfo(context.Background(), &tool.CallInfo{RunID: "run", StepID: "s", Attempt: 1, IdempotencyKey: "run/s/1"})
			res, err := ck.CheckCall(ctx, tool.CheckRequest{Args: map[string]any{"order": "o-1"}, IdempotencyKey: "run/s/1"})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || res.Happened != tc.happened || tc.output != nil && res.Output.(map[string]any)["id"] != "r-1" {
				t.Fatalf("answer %+v %v", res, err)
			}
		})
	}
	if _, ok := scriptTool(t, `echo '{}'`, nil).Checker().(tool.Checker); ok {
		t.Fatal("a tool without check: is a tool.Checker")
	}
	if _, err := New(Config{Name: "t", Command: []string{"x"}, Effect: tool.EffectRead, Check: []string{}}); err == nil || !strings.Contains(err.Error(), "check is empty") {
		t.Fatalf("an empty check: %v", err)
	}
}
