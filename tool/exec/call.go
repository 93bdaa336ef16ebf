package exec

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/proc"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/tool"
)

// waitDelay bounds how long Wait waits for stdout and stderr to close after
// the process exited or was killed (a process outside the group may hold
// them).
const waitDelay = time.Second

// stderrKeep is how much of the end of stderr an error message quotes.
const stderrKeep = 2 << 10

// errOverflow cancels a call whose stdout passed the cap.
var errOverflow = errors.New("output too large")

// Call runs the command once with args as one line of JSON on stdin and
// returns the JSON value it printed. Errors, all naming the tool: a business error for
// unencodable args, a command that cannot be found or run, a non-zero exit
// other than 75 (with the tail of stderr), stdout that is not exactly one
// JSON value, or stdout past MaxOutputBytes; a transient error for exit 75
// and for a timeout (Config.Timeout or ctx's deadline, whichever is
// sooner), wrapping context.DeadlineExceeded; and an error wrapping
// context.Canceled (class fault.Cancelled) when ctx is cancelled.
func (t *Tool) Call(ctx context.Context, args any) (any, error) {
	input, err := json.Marshal(args)
	if err != nil {
		return nil, t.errorf(fault.Business, "cannot encode args as JSON: %w", err)
	}
	input = append(input, '\n') // so that line-oriented readers (sh's read) see a whole line
	path, err := t.resolve()
	if err != nil {
		return nil, err
	}
	limit, limitBy := t.limit(ctx)
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if t.cfg.Timeout > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeout(runCtx, t.cfg.Timeout)
		defer stop()
	}

	stdout := &cappedBuffer{max: t.cfg.MaxOutputBytes, overflow: func() { cancel(errOverflow) }}
	stderr := &tailBuffer{keep: stderrKeep}
	cmd := exec.CommandContext(runCtx, path, t.cfg.Command[1:]...)
	cmd.Args[0] = t.cfg.Command[0]
	cmd.Dir = t.cfg.Dir
	mark := callMark()
	env := append(t.env(tool.CallInfoFrom(ctx)), mark)
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(input)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = waitDelay
	isolate(cmd)
	cmd.Cancel = func() error { return killGroup(cmd.Process) }

	defer pinThread()() // from before Start until the group is killed
	// orphans of the call stay rein's (Linux), so what carries the mark is
	// among rein's descendants; without, any process may be.
	reaper := proc.Subreaper() == nil
	if err := cmd.Start(); err != nil {
		if cerr := t.ctxError(ctx, runCtx, limit, limitBy); cerr != nil {
			return nil, cerr
		}
		return nil, t.startError(path, err)
	}
	if tool.HasProcessHook(ctx) {
		p := tool.Process{PGID: cmd.Process.Pid, Boot: proc.BootID(), Mark: mark}
		p.Start, _ = proc.StartTime(p.PGID)
		tool.ProcessStarted(ctx, p)
	}
	werr := cmd.Wait()
	_ = killGroup(cmd.Process) // stragglers of a program that exited
	// and those that left the group (setsid, setpgid) but carry the mark
	if reaper {
		_, _ = proc.StopMarkedBelow(os.Getpid(), mark, proc.DefaultWait)
	} else {
		_, _ = proc.StopMarked(mark, proc.DefaultWait)
	}
	if errors.Is(werr, exec.ErrWaitDelay) {
		werr = nil // the program succeeded; something it left behind held stdout
	}

	switch {
	case stdout.overflowed:
		return nil, t.errorf(fault.Business, "output exceeds %d bytes: print less, or raise the tool's max output bytes", t.cfg.MaxOutputBytes)
	case werr != nil && runCtx.Err() != nil:
		return nil, t.ctxError(ctx, runCtx, limit, limitBy)
	case werr != nil:
		return nil, t.exitError(werr, redact.FromEnv(env).String(stderr.String()))
	}
	return t.decode(stdout.buf.Bytes())
}

// MarkVar is the variable every process of an exec tool's call inherits,
// its value unique to the call: when the call ends (it returned, failed,
// timed out or was cancelled), rein kills every process whose environment
// still holds it, also those that left the call's process group (setsid).
// A process that clears its environment is not found.
const MarkVar = "REIN_CALL_TOKEN"

// callMark is a new call's MarkVar entry.
func callMark() string {
	return MarkVar + "=" + rand.Text()
}

// limit says how long a call may take from now and what sets that limit.
func (t *Tool) limit(ctx context.Context) (time.Duration, string) {
	limit, by := t.cfg.Timeout, "the tool's timeout"
	if dl, ok := ctx.Deadline(); ok {
		if rem := time.Until(dl); limit == 0 || rem < limit {
			limit, by = rem, "the caller's deadline"
		}
	}
	return max(limit, 0).Round(time.Millisecond), by
}

// resolve finds the program: a path with a slash resolves against the
// declaring file's folder, a bare name is looked up in PATH.
func (t *Tool) resolve() (string, error) {
	name := t.cfg.Command[0]
	if !strings.ContainsRune(name, '/') && !strings.ContainsRune(name, os.PathSeparator) {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", t.errorf(fault.Business, "command %q not found in PATH (%v); bare names are looked up in PATH, write ./%s for a program beside the file that declares the tool", name, err, name)
		}
		return p, nil
	}
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(t.cfg.Dir, p)
	}
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return "", t.errorf(fault.Business, "command %q not found: tried %s (relative paths resolve against the folder of the file that declares the tool, %s)", name, p, t.cfg.Dir)
	case fi.IsDir():
		return "", t.errorf(fault.Business, "command %q is a directory: tried %s (relative paths resolve against the folder of the file that declares the tool, %s)", name, p, t.cfg.Dir)
	case fi.Mode().Perm()&0o111 == 0:
		return "", t.errorf(fault.Business, "command %q is not executable: tried %s (chmod +x it)", name, p)
	}
	return p, nil
}

// env is the program's whole environment: Environ's, then the call
// variables; later entries win.
func (t *Tool) env(info tool.CallInfo) []string {
	return append(Environ(t.cfg.Dir, t.cfg.PassEnv, t.cfg.Env),
		"REIN_RUN_ID="+info.RunID,
		"REIN_STEP_ID="+info.StepID,
		"REIN_ATTEMPT="+strconv.Itoa(info.Attempt),
		"REIN_IDEMPOTENCY_KEY="+info.IdempotencyKey,
	)
}

// Environ is the explicit environment of a program rein starts in dir:
// the variables of rein's own environment that BaseEnv or passEnv name
// (NAME_* passes a prefix), PWD set to dir, then env; later entries win.
// Exec tools and MCP servers (package tool/mcp) get it.
func Environ(dir string, passEnv []string, env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if passes(BaseEnv, name) || passes(passEnv, name) {
			out = append(out, kv)
		}
	}
	out = append(out, "PWD="+dir)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// passes reports whether one of names (exact, or a prefix ending in *)
// matches the variable name.
func passes(names []string, name string) bool {
	for _, n := range names {
		if p, glob := strings.CutSuffix(n, "*"); glob && strings.HasPrefix(name, p) || n == name {
			return true
		}
	}
	return false
}

func (t *Tool) startError(path string, err error) error {
	if errors.Is(err, syscall.ENOEXEC) {
		return t.errorf(fault.Business, "cannot run %s: %v (does the script start with a #! line?)", path, err)
	}
	return t.errorf(fault.Business, "cannot start %s: %w", path, err)
}

// exitError is the error of a process that ended with err: its message
// quotes the tail of stderr, which the error also carries as its detail
// (fault.DetailStderr) for the trace's cause chain.
func (t *Tool) exitError(err error, stderr string) error {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return t.errorf(fault.Business, "%w", err)
	}
	tail := stderr
	if stderr == "" {
		stderr = "(nothing on stderr)"
	}
	var out error
	switch code := ee.ExitCode(); code {
	case -1:
		out = t.errorf(fault.Business, "terminated (%v); stderr: %s", ee, stderr)
	case ExitTransient:
		out = t.errorf(fault.Transient, "temporary failure (exit code %d); stderr: %s", code, stderr)
	default:
		out = t.errorf(fault.Business, "failed with exit code %d; stderr: %s", code, stderr)
	}
	return fault.WithDetail(out, fault.DetailStderr, tail)
}

// ctxError says why runCtx ended, or returns nil if it has not: a deadline
// is a transient timeout, a cancellation of ctx wraps context.Canceled and
// its cause.
func (t *Tool) ctxError(ctx, runCtx context.Context, limit time.Duration, limitBy string) error {
	switch {
	case ctx.Err() == context.Canceled:
		return t.cancelled(ctx)
	case runCtx.Err() == context.DeadlineExceeded:
		return t.errorf(fault.Transient, "timed out after %v (%s): %w", limit, limitBy, context.DeadlineExceeded)
	case runCtx.Err() != nil: // cancelled by the output cap; reported by the caller
		return t.errorf(fault.Business, "%w", context.Cause(runCtx))
	}
	return nil
}

func (t *Tool) cancelled(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err { //nolint:errorlint // identity: a cause other than the plain ctx.Err()
		return fmt.Errorf("tool %s: call cancelled: %w: %w", t.cfg.Name, err, cause)
	}
	return fmt.Errorf("tool %s: call cancelled: %w", t.cfg.Name, err)
}

func (t *Tool) errorf(c fault.Class, format string, args ...any) error {
	return fault.Errorf(c, "tool %s: "+format, append([]any{t.cfg.Name}, args...)...)
}
