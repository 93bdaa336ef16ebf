package fault

import (
	"errors"
	"time"
)

// HintCode says, in a word a program can switch on, what an Error means and
// so what a caller can do about it. Each surface (the CLI, the HTTP API, the
// MCP server, the workflow tool) turns it into its own advice.
type HintCode string

// The hints of the run operations.
const (
	// HintNeedsTools: the run was started with Go tools the caller did not
	// give (Hint.Tools): only a program that registers them can resume it.
	HintNeedsTools HintCode = "needs_tools"
	// HintHeldByAnotherProcess: another process holds the run's lease
	// (Hint.Owner, until Hint.Until; the run last changed at Hint.Since):
	// stop it or wait for the lease to expire.
	HintHeldByAnotherProcess HintCode = "held_by_another_process"
	// HintAlreadyDecided: the step's approval was decided already
	// (Hint.Status, Hint.DecidedBy, Hint.DecidedAt); Hint.Waiting lists
	// the steps still waiting.
	HintAlreadyDecided HintCode = "already_decided"
	// HintNothingToDecide: the step has no pending approval; Hint.Waiting
	// lists the steps that have one (none: the run waits for nobody).
	HintNothingToDecide HintCode = "nothing_to_decide"
	// HintRunFinished: the run has finished (Hint.Status); there is
	// nothing to decide or cancel.
	HintRunFinished HintCode = "run_finished"
	// HintAmbiguousRun: a run ID prefix matched several runs (the error
	// wraps an error listing them).
	HintAmbiguousRun HintCode = "ambiguous_run"
	// HintFlowDoesNotLoad: the flow a run pinned, with its rein.yaml and
	// script, does not load any more (the error wraps the cause, a
	// *flow.Error listing every problem when it is the flow).
	HintFlowDoesNotLoad HintCode = "flow_does_not_load"
	// HintNeedsAPIKey: a model the run may still call does not open
	// because the environment variable holding its API key is not set
	// (Hint.Env names the variables): the run was not resumed and is as it
	// was; set them, then resume it.
	HintNeedsAPIKey HintCode = "needs_api_key"
	// HintNeedsKey: the run holds payloads sealed with an encryption key
	// (Hint.KeyID) that rein.yaml encryption: does not name, as key_id or
	// under old_keys: the run was not resumed and is as it was.
	HintNeedsKey HintCode = "needs_encryption_key"
	// HintNoRun: the reference names no run of the store.
	HintNoRun HintCode = "no_run"
	// HintSessionWaiting: a chat session's newest run has not finished
	// (Hint.RunID, Hint.Status; Hint.Waiting lists its steps that wait for
	// a decision), so the session takes no new message until it does.
	HintSessionWaiting HintCode = "session_waiting"
	// HintNotFailed: only a failed run can be retried, and this one is
	// Hint.Status (waiting or pending: decide or resume it; succeeded or
	// cancelled: it stays so).
	HintNotFailed HintCode = "not_failed"
)

// Hint is the machine-readable part of an Error: a code and the data that
// goes with it. Fields that do not belong to the code are zero.
type Hint struct {
	Code HintCode `json:"code"`
	// RunID is the run the error is about, when one was resolved.
	RunID string `json:"run_id,omitempty"`
	// Tools are the Go tools a needs_tools run lacks, sorted.
	Tools []string `json:"tools,omitempty"`
	// Env are the environment variables a needs_api_key run needs set,
	// sorted.
	Env []string `json:"env,omitempty"`
	// KeyID is the encryption key a needs_encryption_key run was sealed
	// with.
	KeyID string `json:"key_id,omitempty"`
	// Owner and Until are the holder of the lease and its expiry; Since
	// is when the held run last changed (its last commit, lease or
	// decision).
	Owner string    `json:"owner,omitempty"`
	Until time.Time `json:"until,omitzero"`
	Since time.Time `json:"since,omitzero"`
	// Status is a finished run's status, or an approval's decision.
	Status string `json:"status,omitempty"`
	// DecidedBy and DecidedAt say who decided an approval, and when.
	DecidedBy string    `json:"decided_by,omitempty"`
	DecidedAt time.Time `json:"decided_at,omitzero"`
	// Waiting are the steps of the run that wait for a decision.
	Waiting []string `json:"waiting,omitempty"`
}

// Hinted returns err with class c and hint h. A nil err stays nil.
func Hinted(c Class, h Hint, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Class: c, Hint: h, Err: err}
}

// HintOf returns the Hint of the first *Error in err's chain that carries
// one (a non-empty Code or RunID), or the zero Hint.
func HintOf(err error) Hint {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return Hint{}
		}
		if e.Hint.Code != "" || e.Hint.RunID != "" {
			return e.Hint
		}
		err = e.Err
	}
	return Hint{}
}

// Retryable is the one rule every surface (the CLI's JSON, the MCP server,
// the workflow tool, the HTTP API) answers "may the same request succeed
// later?" with: a transient failure (a timeout, 429, 5xx) and a conflict
// (another writer moved the same state first, a lease another process
// holds: read the state again, then retry) may, except the conflict of a
// run that has finished (HintRunFinished), which nothing changes; nothing
// else does.
func Retryable(err error) bool {
	switch ClassOf(err) {
	case Transient:
		return true
	case Conflict:
		return HintOf(err).Code != HintRunFinished
	}
	return false
}
