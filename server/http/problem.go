package http

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/redact"
)

// Problem is an error answer (application/problem+json, RFC 9457): the
// HTTP status and title, and the fault envelope the CLI prints — class,
// message, hint, retryable and, for bad input, the JSON pointer of the
// value at fault.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	fault.Envelope
}

// statusOf maps an error's class onto an HTTP status.
func statusOf(err error) int {
	var he *httpError
	if errors.As(err, &he) {
		return he.status
	}
	switch fault.ClassOf(err) {
	case fault.NotFound:
		return http.StatusNotFound
	case fault.Conflict, fault.Cancelled:
		return http.StatusConflict
	case fault.Format:
		return http.StatusBadRequest
	case fault.Transient:
		return http.StatusServiceUnavailable
	case fault.Damaged:
		return http.StatusInternalServerError
	case fault.Unclassified:
		return http.StatusInternalServerError
	}
	return http.StatusUnprocessableEntity // business, policy, budget
}

// httpError is an error of the request itself (auth, limits, bad input)
// with its status; its class is the fault class it carries.
type httpError struct {
	status  int
	pointer string
	err     error
}

func (e *httpError) Error() string        { return e.err.Error() }
func (e *httpError) Unwrap() error        { return e.err }
func (e *httpError) ErrorPointer() string { return e.pointer }

// requestErr is a bad request: format class, status 400.
func requestErr(pointer, format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, pointer: pointer, err: fault.Errorf(fault.Format, format, args...)}
}

func statusErr(status int, class fault.Class, format string, args ...any) error {
	return &httpError{status: status, err: fault.Errorf(class, format, args...)}
}

// writeProblem answers err as a problem, its message redacted.
func writeProblem(w http.ResponseWriter, err error) {
	status := statusOf(err)
	env := fault.EnvelopeOf(err)
	env.Message = redact.Process().String(env.Message)
	if status >= 500 && fault.ClassOf(err) == fault.Unclassified {
		env.Class, env.ErrorType = fault.Transient, fault.Transient
	}
	p := Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: env.Message, Envelope: env}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p)
}

// decodeBody reads a JSON object of at most limit bytes into v, refusing
// unknown fields, trailing data and an oversized body, each with the JSON
// pointer of what is wrong.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return &httpError{status: http.StatusUnsupportedMediaType, err: fault.Errorf(fault.Format, "the body is %s: send application/json", ct)}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if dec.More() || dec.Decode(new(json.RawMessage)) != io.EOF {
			return requestErr("", "the body holds more than one JSON value: send one object")
		}
		return nil
	}
	var (
		tooBig *http.MaxBytesError
		syn    *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &tooBig):
		return &httpError{status: http.StatusRequestEntityTooLarge, err: fault.Errorf(fault.Format, "the body is over %d bytes: send less", tooBig.Limit)}
	case errors.Is(err, io.EOF):
		return requestErr("", "the body is empty: send a JSON object")
	case errors.As(err, &syn):
		return requestErr("", "the body is not JSON at byte %d: %v", syn.Offset, err)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return requestErr("", "the body is a JSON %s: send an object", typ.Value)
		}
		ptr := "/" + strings.ReplaceAll(typ.Field, ".", "/")
		return requestErr(ptr, "%s: a JSON %s is not allowed here, want %s", ptr, typ.Value, typ.Type)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		ptr := "/" + escapePointer(name)
		return requestErr(ptr, "%s: unknown field %q", ptr, name)
	}
	return requestErr("", "the body: %v", err)
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func notFound(what string) error {
	return statusErr(http.StatusNotFound, fault.NotFound, "%s", what)
}
