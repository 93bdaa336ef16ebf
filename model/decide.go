package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/value/schema"
)

// DecideOptions tunes Decide.
type DecideOptions[T any] struct {
	// Schema is the JSON Schema the answer must satisfy. When nil it is
	// derived from T (see SchemaFor); for T = any there is then no schema
	// and any single JSON value is accepted.
	Schema *schema.Schema
	// Check validates what the schema cannot say (a route from a closed
	// set, the rules of a plan). Its error text goes into the corrective
	// request, so make it precise (JSON pointers).
	Check func(T) error
	// Corrections is how many corrective requests follow a rejected reply.
	// Zero means the default, one; a negative value means none.
	Corrections int
	// Instruction replaces the system message that asks for JSON; the
	// schema is appended to it.
	Instruction string
	// OnReject, when set, is told of every rejected reply that a
	// corrective request follows (call is 1-based), so callers can trace
	// it; the last rejection comes back as Decide's error instead.
	OnReject func(call int, problems error)
}

// Decision is an accepted answer.
type Decision[T any] struct {
	Value T
	// Text is the raw reply that was accepted.
	Text string
	// Usage sums the tokens of every call made, corrective ones included.
	Usage Usage
	// Calls is the number of model calls made (1 + corrections used).
	Calls int
	// Model is the model that answered, when the provider said.
	Model string
}

// RejectedError is a reply that failed to parse or validate after every
// corrective request: the problems of the last reply and its raw text,
// truncated to 2 KiB. Decide returns it classed fault.Format.
type RejectedError struct {
	Problems error
	Raw      string
	Calls    int
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("model reply rejected after %d call(s): %v; reply was %s", e.Calls, e.Problems, quoteFragment(e.Raw, 0, 200))
}

func (e *RejectedError) Unwrap() error { return e.Problems }

const maxRawKept = 2 << 10

// Decide asks m for one structured answer of type T: it sends req with a
// system message carrying the schema, parses the reply strictly (one JSON
// value, unknown fields rejected), validates it against the schema and
// opt.Check, and on failure sends one corrective request (the rejected
// reply and the validation errors) before giving up with a format error
// wrapping *RejectedError. The schema is opt.Schema, else SchemaFor[T],
// else req.Schema when T is an interface type. Errors from the model itself
// are returned as they are (classed by the adapter), with the Decision so
// far (calls and usage). A nil req is a business error; a schema that
// cannot be derived or compiled is returned as is. req is not modified.
func Decide[T any](ctx context.Context, m Model, req *Request, opt DecideOptions[T]) (*Decision[T], error) {
	if req == nil {
		return nil, fault.Errorf(fault.Business, "decide: nil request")
	}
	sch, err := decideSchema[T](req, opt.Schema)
	if err != nil {
		return nil, err
	}
	corrections := opt.Corrections
	if corrections == 0 {
		corrections = 1
	} else if corrections < 0 {
		corrections = 0
	}
	base := *req
	base.Messages = make([]Message, 0, len(req.Messages)+3)
	instr := opt.Instruction
	if instr == "" {
		instr = "Reply with one JSON value only, no prose"
	}
	if sch != nil {
		base.Schema = sch.JSON()
		instr += ", that satisfies this JSON Schema: " + string(base.Schema)
	}
	base.Messages = append(base.Messages, Message{Role: System, Content: instr})
	base.Messages = append(base.Messages, req.Messages...)

	d := &Decision[T]{}
	cur := &base
	for {
		resp, err := m.Generate(ctx, cur)
		d.Calls++
		if resp != nil {
			d.Usage.In += resp.Usage.In
			d.Usage.Out += resp.Usage.Out
			if resp.Model != "" {
				d.Model = resp.Model
			}
		}
		if err != nil {
			return d, err
		}
		if resp == nil {
			return d, fault.Errorf(fault.Business, "decide: model returned neither a response nor an error")
		}
		v, perr := ParseJSON[T](resp.Text, sch)
		if perr == nil && opt.Check != nil {
			perr = opt.Check(v)
		}
		if perr == nil {
			d.Value, d.Text = v, resp.Text
			return d, nil
		}
		if d.Calls > corrections {
			return d, fault.FormatErr(&RejectedError{Problems: perr, Raw: truncate(resp.Text, maxRawKept), Calls: d.Calls})
		}
		if opt.OnReject != nil {
			opt.OnReject(d.Calls, perr)
		}
		next := *cur
		next.Corrective = true
		next.Messages = append(append([]Message(nil), cur.Messages...),
			Message{Role: Assistant, Content: resp.Text},
			Message{Role: User, Content: CorrectionPrompt(perr)})
		cur = &next
	}
}

// CorrectionPrompt is the user turn of a corrective request.
func CorrectionPrompt(problems error) string {
	return "Your previous reply was rejected: " + problems.Error() +
		"\nReply again with only the corrected JSON value, no prose."
}

// decideSchema picks the schema Decide enforces: the one given in the
// options, else the one derived from T, else the one req carries (nil when
// there is none).
func decideSchema[T any](req *Request, given *schema.Schema) (*schema.Schema, error) {
	if given != nil {
		return given, nil
	}
	sch, err := SchemaFor[T]()
	if err != nil || sch != nil || len(req.Schema) == 0 {
		return sch, err
	}
	return schema.Compile("request schema", req.Schema)
}

// ParseJSON parses a model reply strictly: exactly one JSON value (a
// Markdown code fence such as ```json around it is tolerated), valid against
// sch when sch is not nil, decoded into T with unknown fields rejected. For
// T = any the value is made of the types encoding/json decodes into any.
// Errors say what is wrong (empty, truncated, not JSON, more than one
// value, which field) and quote the offending fragment.
func ParseJSON[T any](text string, sch *schema.Schema) (T, error) {
	var zero T
	body := StripFence(text)
	if body == "" {
		return zero, errors.New("reply is empty: expected one JSON value")
	}
	dec := json.NewDecoder(strings.NewReader(body))
	var v any
	if err := dec.Decode(&v); err != nil {
		return zero, notJSON(body, err)
	}
	if off := int(dec.InputOffset()); strings.TrimSpace(body[off:]) != "" {
		off += len(body[off:]) - len(strings.TrimLeft(body[off:], " \t\r\n"))
		return zero, fmt.Errorf("reply holds more than one JSON value: extra text at byte %d: %s", off, quoteFragment(body, off, 80))
	}
	if sch != nil {
		if err := sch.Validate(v); err != nil {
			return zero, fmt.Errorf("reply %w", err)
		}
	}
	if p, ok := any(&zero).(*any); ok {
		*p = v
		return zero, nil
	}
	strict := json.NewDecoder(strings.NewReader(body))
	strict.DisallowUnknownFields()
	var out T
	if err := strict.Decode(&out); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			if ute.Field == "" { // the root, or inside a map: encoding/json does not say
				return zero, fmt.Errorf("reply: got %s, want %s", ute.Value, ute.Type)
			}
			return zero, fmt.Errorf("reply at /%s: got %s, want %s", strings.ReplaceAll(ute.Field, ".", "/"), ute.Value, ute.Type)
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return zero, fmt.Errorf("reply has unknown field %s (%T has no such field)", name, zero)
		}
		return zero, fmt.Errorf("reply does not fit %T: %w", zero, err)
	}
	return out, nil
}

// notJSON explains why body did not decode as JSON.
func notJSON(body string, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("reply is truncated JSON (it ends before the value is complete): ends with %s", quoteTail(body, 80))
	case errors.As(err, &se):
		off := max(int(se.Offset)-1, 0)
		return fmt.Errorf("reply is not JSON (%w at byte %d): %s", err, off, quoteFragment(body, off, 80))
	}
	return fmt.Errorf("reply is not JSON (%w): %s", err, quoteFragment(body, 0, 80))
}

// StripFence removes a Markdown code fence around a reply: a leading ```
// with an optional info string (json, JSON, jsonc, …) on its line, and a
// trailing ```. Text without a leading fence is only trimmed of space.
func StripFence(text string) string {
	body := strings.TrimSpace(text)
	rest, ok := strings.CutPrefix(body, "```")
	if !ok {
		return body
	}
	if line, after, found := strings.Cut(rest, "\n"); found && isInfoString(strings.TrimSpace(line)) {
		rest = after
	} else if len(rest) >= 4 && strings.EqualFold(rest[:4], "json") {
		rest = rest[4:]
	}
	rest = strings.TrimSuffix(strings.TrimSpace(rest), "```")
	return strings.TrimSpace(rest)
}

// isInfoString reports whether s looks like a code fence's language tag.
func isInfoString(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("-_+.", r) {
			return false
		}
	}
	return true
}

// truncate cuts s to at most n bytes on a UTF-8 boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// quoteTail quotes up to the last n bytes of s.
func quoteTail(s string, n int) string {
	if len(s) <= n {
		return strconv.Quote(s)
	}
	off := len(s) - n
	for off < len(s) && !utf8.RuneStart(s[off]) {
		off++
	}
	return strconv.Quote("…" + s[off:])
}

// quoteFragment quotes up to n bytes of s from off.
func quoteFragment(s string, off, n int) string {
	if off > len(s) {
		off = len(s)
	}
	for off > 0 && off < len(s) && !utf8.RuneStart(s[off]) {
		off--
	}
	s = s[off:]
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strconv.Quote(s)
}
