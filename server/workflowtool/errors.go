package workflowtool

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/reinhq/rein/fault"
)

// Error is what a failed action answers: a class (error_type, a fault
// class such as business, format, conflict or not_found), a message that
// says what to do, where (Pointer into the request, or Problems into the
// submitted data), and whether the same call may succeed when retried.
// Its JSON is the answer surfaces send instead of the action's.
type Error struct {
	Type    fault.Class `json:"error_type"`
	Message string      `json:"message"`
	// Pointer is the JSON pointer into the request that is wrong
	// ("/data", "/step_id"), if one is.
	Pointer string `json:"pointer,omitempty"`
	// Problems are every way a submission breaks its step's contract or
	// gate, each with its JSON pointer into the submitted data.
	Problems []Problem `json:"problems,omitempty"`
	// Retryable says the same call may succeed later (a conflict with a
	// concurrent submission: read status, then retry).
	Retryable bool `json:"retryable"`
	// NextActions are the task's ready steps, when the error is about a
	// step that is not ready.
	NextActions []NextAction `json:"next_actions,omitempty"`

	// hint is the run operations' hint of the error it was made from.
	hint *fault.Hint
}

// Problem is one way a submission breaks its contract: where (a JSON
// pointer into the data, "" for the whole) and why.
type Problem struct {
	Pointer string `json:"pointer"`
	Reason  string `json:"reason"`
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// MarshalJSON writes e as the object the workflow tool answers a refused
// action with ({error_type, message, pointer?, problems?, retryable,
// next_actions?}), so a surface that finds an *Error in an error's chain
// (the MCP server) answers with this same object.
func (e *Error) MarshalJSON() ([]byte, error) {
	type plain Error
	return json.Marshal(struct {
		Class fault.Class `json:"class"`
		*plain
		Hint *fault.Hint `json:"hint,omitempty"`
	}{e.Type, (*plain)(e), e.hint})
}

// ErrorPointer is where the request is wrong (fault.Pointed).
func (e *Error) ErrorPointer() string { return e.Pointer }

// Unwrap lets fault.ClassOf see the class.
func (e *Error) Unwrap() error { return fault.New(e.Type, errors.New(e.Message)) }

func errorf(class fault.Class, pointer, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Type: class, Message: msg, Pointer: pointer, Retryable: fault.Retryable(fault.New(class, errors.New(msg)))}
}

// asError turns any error of the run operations into an *Error.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	// the one envelope: unclassified is business; a conflict is worth
	// retrying after reading status, unless the task has finished.
	env := fault.EnvelopeOf(err)
	return &Error{Type: env.Class, Message: env.Message, Retryable: env.Retryable, Pointer: env.Pointer, hint: env.Hint}
}
