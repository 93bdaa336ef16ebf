package cassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/value"
)

// Version is the cassette format this package writes, and the newest it
// reads.
const Version = 1

// Cassette is the content of a cassette file.
type Cassette struct {
	Version   int        `json:"version"`
	Exchanges []Exchange `json:"exchanges"`
}

// Exchange is one model call: the request and what came back. At least one
// of Response and Error is set.
type Exchange struct {
	// Key is Key(request) at record time; replay matches on it. When empty
	// on reading, it is computed from Request.
	Key      string    `json:"key,omitempty"`
	Request  Request   `json:"request"`
	Response *Response `json:"response,omitempty"`
	Error    *Error    `json:"error,omitempty"`
}

// Request is the recorded part of a model.Request.
type Request struct {
	Model    string `json:"model,omitempty"`
	Decision string `json:"decision,omitempty"`
	Step     string `json:"step,omitempty"`
	// Corrective is informational: the call was a corrective retry.
	Corrective bool            `json:"corrective,omitempty"`
	Messages   []model.Message `json:"messages"`
	Schema     json.RawMessage `json:"schema,omitempty"`
	// Tools and ToolChoice are the request's, when it offered tools.
	Tools      []model.ToolDef   `json:"tools,omitempty"`
	ToolChoice *model.ToolChoice `json:"tool_choice,omitempty"`
}

// Response is the recorded part of a model.Response.
type Response struct {
	Text      string           `json:"text"`
	ToolCalls []model.ToolCall `json:"tool_calls,omitempty"`
	Usage     model.Usage      `json:"usage"`
	Model     string           `json:"model,omitempty"`
}

// ModelRequest is the request r records, as a model.Request whose Key is
// the exchange's (unless the key was set by hand).
func (r *Request) ModelRequest() *model.Request {
	req := &model.Request{Model: r.Model, Decision: r.Decision, StepID: r.Step, Corrective: r.Corrective,
		Messages: r.Messages, Schema: r.Schema, Tools: r.Tools}
	if r.ToolChoice != nil {
		req.ToolChoice = *r.ToolChoice
	}
	return req
}

// Error is a recorded failure: its fault class and message.
type Error struct {
	Class   fault.Class `json:"class"`
	Message string      `json:"message"`
}

// Key returns the hex sha256 of the canonical JSON of req's model name,
// decision, messages (with their tool calls and results) and schema, and
// of its tools and tool choice when it has them: what replay matches on.
// Run id, step id, attempt and the corrective flag are left out. A schema
// that is not JSON counts as its text. A request without tools has the
// key it had before tool calling existed, so older cassettes replay.
func Key(req *model.Request) string {
	msgs := make([]any, len(req.Messages))
	for i, m := range req.Messages {
		msg := map[string]any{"role": string(m.Role), "content": m.Content}
		if len(m.ToolCalls) > 0 {
			calls := make([]any, len(m.ToolCalls))
			for j, tc := range m.ToolCalls {
				calls[j] = map[string]any{"id": tc.ID, "name": tc.Name, "args": tc.Args}
			}
			msg["tool_calls"] = calls
		}
		if m.ToolCallID != "" {
			msg["tool_call_id"] = m.ToolCallID
		}
		if m.IsError {
			msg["is_error"] = true
		}
		msgs[i] = msg
	}
	key := map[string]any{
		"model":    req.Model,
		"decision": req.Decision,
		"messages": msgs,
		"schema":   jsonValue(req.Schema),
	}
	if len(req.Tools) > 0 {
		tools := make([]any, len(req.Tools))
		for i, t := range req.Tools {
			tools[i] = map[string]any{"name": t.Name, "description": t.Description, "schema": jsonValue(t.Schema)}
		}
		key["tools"] = tools
	}
	if c := req.ToolChoice; !c.IsZero() {
		key["tool_choice"] = map[string]any{"mode": string(c.Mode), "name": c.Name, "no_parallel": c.NoParallel}
	}
	canon, err := value.Canonical(key)
	if err != nil { // cannot happen: every value above is plain JSON
		canon = fmt.Appendf(nil, "%q %q %v %q %v %v", req.Model, req.Decision, req.Messages, req.Schema, req.Tools, req.ToolChoice)
	}
	return value.Digest(canon)
}

// jsonValue decodes raw for a key: nil when empty, its text when it is not
// one JSON value.
func jsonValue(raw json.RawMessage) any {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		return string(raw)
	}
	return v
}

// Read reads and parses the cassette at path.
func Read(path string) (*Cassette, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read cassette: %w", err)
	}
	return Parse(data, path)
}

var hexKey = regexp.MustCompile(`^[0-9a-f]{64}$`)

// knownClasses are the classes a recorded error may have.
var knownClasses = []fault.Class{fault.Transient, fault.Format, fault.Business, fault.Budget, fault.Policy, fault.Conflict, fault.NotFound, fault.Cancelled}

// ErrRecordAgain is wrapped by the errors of a cassette that cannot answer
// (empty, corrupt, too new, or without the request): the fix is to record
// it again.
var ErrRecordAgain = errors.New("record the cassette again")

// Parse reads a cassette. filename is used only in messages ("<cassette>"
// when empty). Errors name the file: a JSON syntax or type error with
// line:col, a cassette from a newer version with both versions, and
// unknown fields, missing versions, exchanges with neither response nor
// error, unknown error classes and malformed keys with the exchange's index.
// Exchanges without a key get Key of their request.
func Parse(data []byte, filename string) (*Cassette, error) {
	if filename == "" {
		filename = "<cassette>"
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("cassette %s is empty: %w", filename, ErrRecordAgain)
	}
	var head struct {
		Version *int `json:"version"`
	}
	if err := decodeOne(data, &head, false); err != nil {
		return nil, jsonError(filename, data, err)
	}
	switch {
	case head.Version == nil:
		return nil, fmt.Errorf("cassette %s has no \"version\": it is not a rein cassette", filename)
	case *head.Version > Version:
		return nil, fmt.Errorf("cassette %s is version %d, newer than this rein reads (%d): upgrade rein or %w", filename, *head.Version, Version, ErrRecordAgain)
	case *head.Version < 1:
		return nil, fmt.Errorf("cassette %s has version %d: versions start at 1", filename, *head.Version)
	}
	var c Cassette
	if err := decodeOne(data, &c, true); err != nil {
		return nil, jsonError(filename, data, err)
	}
	if c.Exchanges == nil {
		c.Exchanges = []Exchange{}
	}
	var problems []string
	for i := range c.Exchanges {
		x := &c.Exchanges[i]
		at := fmt.Sprintf("exchanges[%d]", i)
		switch {
		case x.Key == "":
			x.Key = Key(x.Request.ModelRequest())
		case !hexKey.MatchString(x.Key):
			problems = append(problems, fmt.Sprintf("%s: key must be 64 lowercase hex digits (a sha256), got %q; delete it to have it computed", at, cut(x.Key, 80)))
		}
		if x.Response == nil && x.Error == nil {
			problems = append(problems, at+": has neither \"response\" nor \"error\"")
		}
		if x.Error != nil && !isKnown(x.Error.Class) {
			problems = append(problems, fmt.Sprintf("%s: error class %q is not one of %s", at, cut(string(x.Error.Class), 40), classList()))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("cassette %s: %s", filename, strings.Join(problems, "; "))
	}
	return &c, nil
}

// decodeOne decodes the one JSON value data holds into v.
func decodeOne(data []byte, v any, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return err
	}
	if off := dec.InputOffset(); len(bytes.TrimSpace(data[off:])) > 0 {
		return &trailingError{offset: off + int64(len(data[off:])-len(bytes.TrimLeft(data[off:], " \t\r\n")))}
	}
	return nil
}

type trailingError struct{ offset int64 }

func (e *trailingError) Error() string { return "unexpected text after the cassette's JSON object" }

// jsonError places a decoding error in the file.
func jsonError(filename string, data []byte, err error) error {
	var (
		se  *json.SyntaxError
		ute *json.UnmarshalTypeError
		te  *trailingError
	)
	switch {
	case errors.As(err, &se):
		line, col := lineCol(data, max(se.Offset-1, 0))
		return fmt.Errorf("cassette %s:%d:%d: not valid JSON: %w (the file is corrupt: %w)", filename, line, col, se, ErrRecordAgain)
	case errors.As(err, &ute):
		line, col := lineCol(data, valueStart(data, ute.Offset))
		field := ute.Field
		if field == "" {
			field = "the cassette"
		}
		return fmt.Errorf("cassette %s:%d:%d: %s: got JSON %s, want %s", filename, line, col, field, ute.Value, jsonKind(ute.Type))
	case errors.As(err, &te):
		line, col := lineCol(data, te.offset)
		return fmt.Errorf("cassette %s:%d:%d: %w", filename, line, col, te)
	case strings.Contains(err.Error(), "unexpected EOF"):
		return fmt.Errorf("cassette %s: truncated JSON (the file ends early: was the recording interrupted? %w)", filename, ErrRecordAgain)
	}
	return fmt.Errorf("cassette %s: %s", filename, strings.TrimPrefix(err.Error(), "json: "))
}

// valueStart returns where the JSON token ending at or after end starts:
// encoding/json reports type errors at the end of the offending value.
func valueStart(data []byte, end int64) int64 {
	dec := json.NewDecoder(bytes.NewReader(data))
	var prev int64
	for {
		if _, err := dec.Token(); err != nil {
			return max(end-1, 0)
		}
		cur := dec.InputOffset()
		if cur >= end {
			for prev < cur && bytes.IndexByte([]byte(" \t\r\n,:"), data[prev]) >= 0 {
				prev++
			}
			return prev
		}
		prev = cur
	}
}

// jsonKind names the JSON type a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	}
	return t.String()
}

// lineCol turns a byte offset into a 1-based line and column (in runes).
func lineCol(data []byte, off int64) (line, col int) {
	off = min(off, int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[lineStart:]) + 1
}

func isKnown(c fault.Class) bool {
	for _, k := range knownClasses {
		if c == k {
			return true
		}
	}
	return false
}

func classList() string {
	names := make([]string, len(knownClasses))
	for i, c := range knownClasses {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// cut returns s cut to at most n bytes on a UTF-8 boundary, "…" marking a cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// encode writes c as indented JSON without HTML escaping.
func encode(c *Cassette) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
