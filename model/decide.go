package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
// wrapping *RejectedError. Errors from the model itself are returned as
// they are (classed by the adapter). req is not modified.
func Decide[T any](ctx context.Context, m Model, req *Request, opt DecideOptions[T]) (*Decision[T], error) {
	sch := opt.Schema
	if sch == nil {
		var err error
		if sch, err = SchemaFor[T](); err != nil {
			return nil, err
		}
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
			d.Model = resp.Model
		}
		if err != nil {
			return d, err
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
			raw := resp.Text
			if len(raw) > maxRawKept {
				raw = raw[:maxRawKept]
			}
			return d, fault.FormatErr(&RejectedError{Problems: perr, Raw: raw, Calls: d.Calls})
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

// ParseJSON parses a model reply strictly: exactly one JSON value (a
// ```json fence around it is tolerated), valid against sch when sch is not
// nil, decoded into T with unknown fields rejected. Errors quote the
// offending fragment.
func ParseJSON[T any](text string, sch *schema.Schema) (T, error) {
	var zero T
	body := StripFence(text)
	dec := json.NewDecoder(strings.NewReader(body))
	var v any
	if err := dec.Decode(&v); err != nil {
		return zero, fmt.Errorf("reply is not JSON (%v): %s", err, quoteFragment(body, 0, 80))
	}
	if dec.More() {
		return zero, fmt.Errorf("reply holds more than one JSON value: extra text %s", quoteFragment(body, int(dec.InputOffset()), 80))
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
			return zero, fmt.Errorf("reply at /%s: got %s, want %s", strings.ReplaceAll(ute.Field, ".", "/"), ute.Value, ute.Type)
		}
		return zero, fmt.Errorf("reply does not fit %T: %v", zero, err)
	}
	return out, nil
}

// StripFence removes a Markdown code fence around a reply.
func StripFence(text string) string {
	body := strings.TrimSpace(text)
	if strings.HasPrefix(body, "```") {
		body = strings.TrimPrefix(body, "```json")
		body = strings.TrimPrefix(body, "```")
		body = strings.TrimSuffix(strings.TrimSpace(body), "```")
	}
	return strings.TrimSpace(body)
}

// quoteFragment quotes up to n bytes of s from off.
func quoteFragment(s string, off, n int) string {
	if off > len(s) {
		off = len(s)
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
