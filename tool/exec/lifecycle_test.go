//go:build linux

package exec

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/tool"
)

func evalSymlinks(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// hang starts a child `sleep 30`, records its pid, and waits for it.
const hang = `sleep 30 &
echo $! > "$PIDFILE"
wait`

// TestCallKillsProcessGroup stops a script that waits on a child, by the
// tool's timeout, the caller's deadline, or a cancellation, and expects the
// whole group gone when Call returns. The group comes from the process
// hook, known as soon as the script started: a timer that fires before the
// shell got to spawn its child (a loaded machine) still leaves a group to
// check, so no case depends on the machine's speed. The cancellation comes
// only once the child's pid was written, so there the child is certain.
func TestCallKillsProcessGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		timeout time.Duration // Config.Timeout
		// ctx returns the call's context; ready is closed once the child's
		// pid was written.
		ctx   func(ready <-chan struct{}) (context.Context, context.CancelFunc)
		class fault.Class
		is    error
		msg   string
	}{
		{
			name:    "tool timeout",
			timeout: 300 * time.Millisecond,
			ctx: func(<-chan struct{}) (context.Context, context.CancelFunc) {
				return context.WithCancel(context.Background())
			},
			class: fault.Transient, is: context.DeadlineExceeded,
			msg: "tool t: timed out after 300ms (the tool's timeout)",
		},
		{
			name:    "caller deadline sooner",
			timeout: time.Minute,
			ctx: func(<-chan struct{}) (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 300*time.Millisecond)
			},
			class: fault.Transient, is: context.DeadlineExceeded,
			msg: "(the caller's deadline)",
		},
		{
			name: "cancellation",
			ctx: func(ready <-chan struct{}) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancelCause(context.Background())
				go func() {
					<-ready
					cancel(errors.New("user pressed ^C"))
				}()
				return ctx, func() { cancel(nil) }
			},
			class: fault.Cancelled, is: context.Canceled,
			msg: "tool t: call cancelled: context canceled: user pressed ^C",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pidfile := filepath.Join(t.TempDir(), "child.pid")
			tl := scriptTool(t, hang, func(c *Config) {
				c.Timeout = tt.timeout
				c.Env = map[string]string{"PIDFILE": pidfile}
			})
			ready, returned := make(chan struct{}), make(chan struct{})
			var group atomic.Int64
			var watching sync.WaitGroup
			defer watching.Wait()
			defer close(returned)
			hook := func(_ context.Context, p tool.Process) {
				group.Store(int64(p.PGID))
				watching.Go(func() {
					for {
						if waitFile(pidfile, 0) {
							close(ready)
							return
						}
						select {
						case <-returned:
							return
						case <-time.After(10 * time.Millisecond):
						}
					}
				})
			}
			ctx, cancel := tt.ctx(ready)
			defer cancel()
			start := time.Now()
			_, err := tl.Call(tool.WithProcessHook(ctx, hook), nil)
			if took := time.Since(start); took > time.Minute {
				t.Errorf("Call took %v; the hanging script was not stopped", took)
			}
			if !errors.Is(err, tt.is) || fault.ClassOf(err) != tt.class || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %v (class %q), want %v, class %q, containing %q", err, fault.ClassOf(err), tt.is, tt.class, tt.msg)
			}
			pgid := int(group.Load())
			if pgid == 0 {
				t.Fatal("the process hook was not called")
			}
			waitGroupGone(t, pgid)
			if tt.name == "cancellation" {
				waitGone(t, readPID(t, pidfile)) // the child certainly ran
			}
		})
	}
}

func TestCallKillsStragglers(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "child.pid")
	// The child keeps stdout open after the script exits successfully.
	tl := scriptTool(t, `sleep 30 &
echo $! > "$PIDFILE"
echo '"done"'`, func(c *Config) { c.Env = map[string]string{"PIDFILE": pidfile} })
	start := time.Now()
	got, err := tl.Call(context.Background(), nil)
	if err != nil || got != "done" {
		t.Errorf("Call = %v, %v; want done", got, err)
	}
	if took := time.Since(start); took > waitDelay+3*time.Second {
		t.Errorf("Call took %v; it waited for the straggler", took)
	}
	waitGone(t, readPID(t, pidfile))
}

func TestCallCommandResolution(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeScript(t, dir, "tools/where.sh", `printf '"%s"' "$(pwd -P)"`)
	if err := writeFile(filepath.Join(dir, "noshebang.sh"), "echo 1\n", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(dir, "plain.sh"), "#!/bin/sh\necho 1\n", 0o644); err != nil {
		t.Fatal(err)
	}
	abs := writeScript(t, t.TempDir(), "abs.sh", `echo '"abs"'`)
	tests := []struct {
		name    string
		command []string
		want    any
		substr  []string
	}{
		{name: "relative to the declaring folder", command: []string{"./tools/where.sh"}, want: evalSymlinks(t, dir)},
		{name: "relative without dot", command: []string{"tools/where.sh"}, want: evalSymlinks(t, dir)},
		{name: "absolute", command: []string{abs}, want: "abs"},
		{name: "bare name from PATH with arguments", command: []string{"sh", "-c", `echo "[\"$0\", \"$1\"]"`, "zero", "one"}, want: []any{"zero", "one"}},
		{name: "missing relative", command: []string{"./tools/nope.sh"}, substr: []string{`command "./tools/nope.sh" not found: tried ` + filepath.Join(dir, "tools/nope.sh"), "relative paths resolve against the folder of the file that declares the tool"}},
		{name: "missing bare name", command: []string{"rein-no-such-program"}, substr: []string{`command "rein-no-such-program" not found in PATH`, "write ./rein-no-such-program"}},
		{name: "directory", command: []string{"./tools"}, substr: []string{"is a directory: tried " + filepath.Join(dir, "tools")}},
		{name: "not executable", command: []string{"./plain.sh"}, substr: []string{`command "./plain.sh" is not executable: tried ` + filepath.Join(dir, "plain.sh")}},
		{name: "no #! line", command: []string{"./noshebang.sh"}, substr: []string{"cannot run " + filepath.Join(dir, "noshebang.sh"), "#! line"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl, err := New(Config{Name: "t", Command: tt.command, Dir: dir, Effect: "read"})
			if err != nil {
				t.Fatal(err)
			}
			got, err := tl.Call(context.Background(), nil)
			if tt.substr == nil {
				if err != nil || !reflect.DeepEqual(got, tt.want) {
					t.Errorf("Call = %#v, %v; want %#v", got, err, tt.want)
				}
				return
			}
			if fault.ClassOf(err) != fault.Business {
				t.Fatalf("err = %v, want a business error", err)
			}
			for _, s := range tt.substr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestCallContextDoneBeforeStart(t *testing.T) {
	t.Parallel()
	expired, cancel1 := context.WithTimeout(context.Background(), -time.Second)
	defer cancel1()
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	tests := []struct {
		name  string
		ctx   context.Context
		class fault.Class
		is    error
		msg   string
	}{
		{"expired", expired, fault.Transient, context.DeadlineExceeded, "tool t: timed out after 0s (the caller's deadline)"},
		{"cancelled", cancelled, fault.Cancelled, context.Canceled, "tool t: call cancelled: context canceled"},
	}
	tl := scriptTool(t, `echo '"ran"'`, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tl.Call(tt.ctx, nil)
			if !errors.Is(err, tt.is) || fault.ClassOf(err) != tt.class || !strings.HasPrefix(err.Error(), tt.msg) {
				t.Errorf("Call = %v, %v (class %q); want %v, class %q, %q", got, err, fault.ClassOf(err), tt.is, tt.class, tt.msg)
			}
		})
	}
}
