// Package fault is rein's one error vocabulary. Every error that crosses a
// port (model, tool, store) or leaves the engine carries a Class, and the
// class — never the model — decides what the runtime does about it.
package fault

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Class is the kind of a failure. The zero value is Unclassified, which the
// engine treats as Business (fail fast, no retry).
type Class string

// The classes; docs/ARCHITECTURE.md "Error classes" says what each makes
// the engine do.
const (
	Unclassified Class = ""
	// Transient failures (timeouts, 429, 5xx, connection resets, exec exit 75)
	// are retried with exponential backoff and jitter up to a step's retries.
	Transient Class = "transient"
	// Format failures (model output that is not JSON or breaks its schema) get
	// one corrective retry, then the step's on_error.
	Format Class = "format"
	// Business failures (the tool says the data is wrong, 4xx, a panic) are
	// never retried unless on_error is retry.
	Business Class = "business"
	// Budget failures stop the run; the error names the budget that ran out.
	Budget Class = "budget"
	// Policy failures come from the gate in front of every tool invocation.
	Policy Class = "policy"
	// Conflict failures mean another writer advanced the same state first.
	Conflict Class = "conflict"
	// NotFound failures mean the named thing does not exist.
	NotFound Class = "not_found"
	// Cancelled failures mean the run's context was cancelled.
	Cancelled Class = "cancelled"
	// Damaged failures mean the run store's data is damaged (store.ErrDamaged):
	// nothing more is read or written; they stop the run.
	Damaged Class = "damaged"
	// Guardrail failures mean an agent's input or output guardrail tripped
	// (agent.yaml guardrails:): the turn stops there and so does the run.
	Guardrail Class = "guardrail"
)

// Error is an error with a class. Wrap it with fmt.Errorf("...: %w", err) as
// usual; ClassOf finds it through any chain.
type Error struct {
	Class Class
	// Budget names the budget that ran out, for Class Budget.
	Budget string
	// Hint is the machine-readable part of an error of the run operations
	// (HintOf); zero for other errors.
	Hint Hint
	Err  error
}

// Retryable reports whether the same request may succeed later (the rule of
// package-level Retryable, applied to e's class).
func (e *Error) Retryable() bool { return Retryable(e) }

// Error returns the wrapped message.
func (e *Error) Error() string {
	if e.Err == nil {
		return string(e.Class)
	}
	return e.Err.Error()
}

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error { return e.Err }

// New returns err with class c. A nil err stays nil.
func New(c Class, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Class: c, Err: err}
}

// Errorf formats a message and gives it class c.
func Errorf(c Class, format string, args ...any) error {
	return &Error{Class: c, Err: fmt.Errorf(format, args...)}
}

// TransientErr marks err as transient (retryable). Nil stays nil.
func TransientErr(err error) error { return New(Transient, err) }

// FormatErr marks err as a format error. Nil stays nil.
func FormatErr(err error) error { return New(Format, err) }

// BusinessErr marks err as a business error (not retryable). Nil stays nil.
func BusinessErr(err error) error { return New(Business, err) }

// BudgetErr reports that the named budget ran out.
func BudgetErr(budget string, format string, args ...any) error {
	return &Error{Class: Budget, Budget: budget, Err: fmt.Errorf(format, args...)}
}

// ClassOf returns the class of the outermost classified error in err's chain.
// Context cancellation is Cancelled and a deadline is Transient when nothing
// in the chain says otherwise; anything else unclassified is Business.
func ClassOf(err error) Class {
	if err == nil {
		return Unclassified
	}
	var e *Error
	if errors.As(err, &e) && e.Class != Unclassified {
		return e.Class
	}
	if errors.Is(err, context.Canceled) {
		return Cancelled
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Transient
	}
	return Business
}

// BudgetOf returns the name of the budget that ran out, or "".
func BudgetOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Budget
	}
	return ""
}

// retryAfter marks an error with the wait its source asked for (an HTTP
// Retry-After header, a rate limiter's reset time).
type retryAfter struct {
	err   error
	after time.Duration
}

func (r *retryAfter) Error() string { return r.err.Error() }
func (r *retryAfter) Unwrap() error { return r.err }

// WithRetryAfter attaches the wait the error's source asked for before a
// retry; the engine waits at least that long (capped by the step's backoff
// max) before its next attempt. A non-positive d returns err unchanged.
func WithRetryAfter(err error, d time.Duration) error {
	if err == nil || d <= 0 {
		return err
	}
	return &retryAfter{err: err, after: d}
}

// RetryAfterOf returns the wait attached with WithRetryAfter, or 0.
func RetryAfterOf(err error) time.Duration {
	var r *retryAfter
	if errors.As(err, &r) {
		return r.after
	}
	return 0
}
