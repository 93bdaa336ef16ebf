//go:build linux

package exec

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// escape starts a grandchild that leaves the call's process group and
// session (setsid), writes its pid, and would write the effect file four
// seconds later; the script waits until the pid is written, then ends as
// $ENDING says (exit: prints "done"; hang: sleeps past the timeout).
const escape = `setsid sh -c 'echo $$ > "$PIDFILE"; sleep 4; echo late > "$EFFECT"' </dev/null >/dev/null 2>&1 &
while [ ! -s "$PIDFILE" ]; do sleep 0.01; done
if [ "$ENDING" = hang ]; then sleep 30; fi
echo '"done"'`

// TestCallStopsSetsidGrandchild: a grandchild that called setsid is out of
// the call's process group, but it carries the call's mark: when the call
// ends (the tool exited, or timed out), it is already gone, and its effect
// never happens.
func TestCallStopsSetsidGrandchild(t *testing.T) {
	t.Parallel()
	for _, ending := range []string{"exit", "hang"} {
		t.Run(ending, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidfile, effect := filepath.Join(dir, "grandchild.pid"), filepath.Join(dir, "effect")
			tl := scriptTool(t, escape, func(c *Config) {
				// the hang times out 2.5 s before the effect is due: a
				// margin for stopping the call on a loaded machine (the
				// effect due as the timeout fell failed under load).
				c.Timeout = 1500 * time.Millisecond
				if ending == "exit" {
					c.Timeout = time.Minute
				}
				c.Env = map[string]string{"PIDFILE": pidfile, "EFFECT": effect, "ENDING": ending}
			})
			_, err := tl.Call(context.Background(), nil)
			if ending == "exit" && err != nil {
				t.Fatalf("Call: %v", err)
			}
			pid := readPID(t, pidfile)
			if !processGone(pid) {
				t.Errorf("the setsid grandchild %d still runs after the call returned", pid)
				defer func() { _ = syscall.Kill(pid, syscall.SIGKILL) }()
			}
			// The effect was due four seconds after the grandchild started:
			// had it lived, it would be written by now.
			time.Sleep(4500 * time.Millisecond)
			if _, err := os.Stat(effect); err == nil {
				t.Error("the setsid grandchild wrote its effect after the call ended")
			}
		})
	}
}
