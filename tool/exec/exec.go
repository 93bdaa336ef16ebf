package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/reinhq/rein/tool"
)

// DefaultMaxOutputBytes is the stdout cap when Config.MaxOutputBytes is 0.
const DefaultMaxOutputBytes = 1 << 20

// ExitTransient is the exit code (EX_TEMPFAIL) that makes a call fail with
// a transient, retryable error.
const ExitTransient = 75

// reserved are the environment variables every call sets itself.
var reserved = []string{"REIN_RUN_ID", "REIN_STEP_ID", "REIN_ATTEMPT", "REIN_IDEMPOTENCY_KEY"}

// BaseEnv are the variables of rein's own environment every exec tool
// gets (when they are set): what programs need to find other programs,
// files, the locale and the time zone. A name ending in * stands for
// every variable it prefixes. Nothing else of rein's environment is
// passed unless Config.PassEnv names it, so API keys and passwords rein
// holds never reach a tool by accident.
var BaseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR"}

// Config declares an exec tool. The flow loader fills it from a flow file's
// tools: section.
type Config struct {
	// Name is the tool's name; required.
	Name        string
	Description string
	// Command is the program and its arguments; required. A program name
	// with a slash is a path, resolved against Dir when relative; a bare
	// name is looked up in PATH.
	Command []string
	// Dir is the directory relative commands resolve against (the folder
	// of the declaring file) and the program's working directory. Defaults
	// to the working directory of the process at New.
	Dir string
	// Env sets variables for the program (over BaseEnv and PassEnv). The
	// REIN_* call variables are reserved.
	Env map[string]string
	// PassEnv names the variables of rein's own environment the program
	// gets besides BaseEnv; a name ending in * passes every variable it
	// prefixes (AWS_*). A variable rein does not have is left out.
	PassEnv []string
	// Timeout bounds each call on top of the caller's deadline; 0 means
	// only the caller's deadline applies.
	Timeout time.Duration
	// MaxOutputBytes caps stdout. Defaults to DefaultMaxOutputBytes (1 MiB).
	MaxOutputBytes int64
	// Effect is required: an exec tool can do anything, so it must say
	// what it does.
	Effect        tool.Effect
	Reversibility tool.Reversibility
	Idempotent    bool
	// Undo, Compensate, Resources, Tags and Verifies are the tool's as
	// tool.Spec describes them, passed on in its Spec.
	Undo, Compensate *tool.Compensation
	Resources        []string
	Tags             []string
	Verifies         []string
	// Premise is checked on every call's output (tool.Spec.Premise).
	Premise *tool.Premise
	// InputSchema and OutputSchema are JSON Schemas, or nil for any value.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	// Check is the command that asks whether a call took effect
	// (rein.yaml check:; the tool is then a tool.Checker): nil for none.
	// It runs like the tool (Dir, Env, PassEnv, Timeout, MaxOutputBytes),
	// with the protocol of CheckCall.
	Check []string
}

// Tool is an exec tool. It is safe for concurrent use; each call starts its
// own process.
type Tool struct {
	cfg  Config
	spec tool.Spec
	// check runs Config.Check; nil without one.
	check *Tool
}

var _ tool.Tool = (*Tool)(nil)

// New validates cfg and returns the tool. It reports every problem at once:
// a missing name or command, a missing or unknown effect, an unknown
// reversibility, a negative timeout or output cap, a reserved or malformed
// Env key, a schema that is not JSON. The command itself is looked up at
// each call, so it may be created after New.
func New(cfg Config) (*Tool, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("exec tool %q: "+format, append([]any{cfg.Name}, args...)...))
	}
	if cfg.Name == "" {
		bad("name is required")
	}
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		bad("command is required (a program and its arguments, e.g. [\"./tools/send.sh\", \"--dry-run\"])")
	}
	switch {
	case cfg.Effect == "":
		bad("effect is required: none, read, write, external or destructive")
	case !cfg.Effect.Valid():
		bad("unknown effect %q: want none, read, write, external or destructive", cfg.Effect)
	}
	if !cfg.Reversibility.Valid() {
		bad("unknown reversibility %q: want reversible, compensatable or irreversible", cfg.Reversibility)
	}
	if cfg.Timeout < 0 {
		bad("timeout %v is negative", cfg.Timeout)
	}
	if cfg.MaxOutputBytes < 0 {
		bad("max output bytes %d is negative", cfg.MaxOutputBytes)
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			bad("env key %q is not a variable name", k)
		case slices.Contains(reserved, k):
			bad("env key %s is reserved: rein sets it for every call", k)
		case strings.ContainsRune(cfg.Env[k], 0):
			bad("env %s holds a NUL byte", k)
		}
	}
	for _, k := range cfg.PassEnv {
		name := strings.TrimSuffix(k, "*")
		switch {
		case name == "" || strings.ContainsAny(name, "=*\x00"):
			bad("pass_env %q is not a variable name (or a prefix ending in *, like AWS_*)", k)
		case slices.Contains(reserved, k):
			bad("pass_env %s is reserved: rein sets it for every call", k)
		}
	}
	if cfg.InputSchema != nil && !json.Valid(cfg.InputSchema) {
		bad("input schema is not valid JSON")
	}
	if cfg.OutputSchema != nil && !json.Valid(cfg.OutputSchema) {
		bad("output schema is not valid JSON")
	}
	if cfg.Check != nil && (len(cfg.Check) == 0 || cfg.Check[0] == "") {
		bad("check is empty: give the program that answers whether a call took effect, e.g. [\"./tools/refund-check.sh\"]")
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("exec tool %q: dir %q: %w", cfg.Name, cfg.Dir, err)
	}
	cfg.Dir = dir
	cfg.Command = slices.Clone(cfg.Command)
	cfg.Env = maps.Clone(cfg.Env)
	cfg.PassEnv = slices.Clone(cfg.PassEnv)
	if cfg.MaxOutputBytes == 0 {
		cfg.MaxOutputBytes = DefaultMaxOutputBytes
	}
	t := &Tool{cfg: cfg, spec: tool.Spec{
		Name:          cfg.Name,
		Description:   cfg.Description,
		InputSchema:   cfg.InputSchema,
		OutputSchema:  cfg.OutputSchema,
		Effect:        cfg.Effect,
		Reversibility: cfg.Reversibility,
		Idempotent:    cfg.Idempotent,
		Undo:          cfg.Undo,
		Compensate:    cfg.Compensate,
		Resources:     slices.Clone(cfg.Resources),
		Tags:          slices.Clone(cfg.Tags),
		Verifies:      slices.Clone(cfg.Verifies),
		Premise:       cfg.Premise,
	}}
	if cfg.Check != nil {
		t.check = &Tool{cfg: cfg}
		t.check.cfg.Name, t.check.cfg.Command = cfg.Name+" check", slices.Clone(cfg.Check)
	}
	return t, nil
}

// Spec describes the tool as declared.
func (t *Tool) Spec() tool.Spec { return t.spec }
