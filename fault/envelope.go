package fault

import "errors"

// Envelope is the one shape an error takes on every surface that answers
// in JSON: the CLI's -o json, the MCP server's tool errors, the workflow
// tool's refusals and the HTTP API's problem documents. Class is the fault
// class (unclassified counts as business), ErrorType the same class under
// the name the workflow tool and the MCP server have always answered with,
// Message what happened, Hint the machine-readable hint of the run
// operations (nil when the error has none), Retryable the one rule
// (Retryable), and Pointer where the request is wrong (a JSON pointer or a
// file:line:col), when the error says.
type Envelope struct {
	Class     Class  `json:"class"`
	ErrorType Class  `json:"error_type"`
	Message   string `json:"message"`
	Hint      *Hint  `json:"hint,omitempty"`
	Retryable bool   `json:"retryable"`
	Pointer   string `json:"pointer,omitempty"`
}

// Pointed is an error that says where the request it refuses is wrong: a
// JSON pointer into it, or a file:line:col. EnvelopeOf takes the first in
// an error's chain.
type Pointed interface {
	error
	ErrorPointer() string
}

// EnvelopeOf returns err's Envelope. A nil err has the zero Envelope.
func EnvelopeOf(err error) Envelope {
	if err == nil {
		return Envelope{}
	}
	class := ClassOf(err)
	if class == Unclassified {
		class = Business
	}
	e := Envelope{Class: class, ErrorType: class, Message: err.Error(), Retryable: Retryable(err)}
	if h := HintOf(err); h.Code != "" || h.RunID != "" {
		e.Hint = &h
	}
	var p Pointed
	if errors.As(err, &p) {
		e.Pointer = p.ErrorPointer()
	}
	return e
}
