package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// MaxToolCalls bounds the tool calls one Response may carry. Adapters
// reject a reply with more as a fault.Format error (see CheckToolCalls)
// rather than hand thousands of calls to the caller; the scripted model
// refuses a script reply with more.
const MaxToolCalls = 128

// ToolDef is a tool the model may call.
type ToolDef struct {
	// Name is what the model calls the tool by: 1 to 64 letters, digits,
	// '_' or '-' (the rule both OpenAI and Anthropic enforce).
	Name string `json:"name"`
	// Description tells the model what the tool does and when to use it.
	Description string `json:"description,omitempty"`
	// Schema is the JSON Schema of the arguments: an object schema (its
	// "type", when given, is "object"). Nil means no arguments.
	Schema json.RawMessage `json:"schema,omitempty"`
}

// ToolCall is one call to a tool that the model asked for.
type ToolCall struct {
	// ID pairs the call with its result (Message.ToolCallID).
	ID string `json:"id"`
	// Name is the tool the model named; it may be one the request did not
	// offer.
	Name string `json:"name"`
	// Args are the arguments exactly as the model wrote them: normally a
	// JSON object, but not checked to be JSON at all.
	Args string `json:"args"`
}

// ToolChoiceMode says whether the model must call a tool.
type ToolChoiceMode string

// Tool choice modes; "" is ToolAuto.
const (
	// ToolAuto lets the model choose between answering and calling tools.
	ToolAuto ToolChoiceMode = "auto"
	// ToolNone forbids tool calls: the model answers with text.
	ToolNone ToolChoiceMode = "none"
	// ToolRequired makes the model call at least one tool.
	ToolRequired ToolChoiceMode = "required"
	// ToolNamed makes the model call the tool ToolChoice.Name.
	ToolNamed ToolChoiceMode = "tool"
)

// ToolChoice is a request's tool_choice. The zero value is auto with
// parallel calls allowed, and sends nothing.
type ToolChoice struct {
	// Mode is auto ("" too), none, required or tool.
	Mode ToolChoiceMode `json:"mode,omitempty"`
	// Name is the tool the model must call when Mode is ToolNamed.
	Name string `json:"name,omitempty"`
	// NoParallel asks for at most one tool call per reply (OpenAI
	// parallel_tool_calls: false, Anthropic disable_parallel_tool_use).
	NoParallel bool `json:"no_parallel,omitempty"`
}

// IsZero reports whether c is the zero ToolChoice (auto, parallel).
func (c ToolChoice) IsZero() bool { return c == ToolChoice{} }

// CheckRequest checks the tool-calling parts of req, as adapters do before
// sending it: tool names (valid, unique), argument schemas (JSON objects of
// type object), the tool choice (a known mode; a named tool among Tools;
// none but auto without tools), and the messages (tool calls only on
// assistant messages, each with an ID and a name; a Tool message answers a
// call an earlier assistant message made; ToolCallID and IsError only on
// Tool messages). The error lists every problem, located ("tools[1]",
// "messages[3].tool_calls[0]"); callers class it fault.Business.
func CheckRequest(req *Request) error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	var names map[string]int
	for i, t := range req.Tools {
		if !validToolName(t.Name) {
			add("tools[%d]: name %s must be 1 to 64 letters, digits, _ or -", i, strconv.Quote(cutText(t.Name, 80)))
		}
		if names == nil {
			names = make(map[string]int, len(req.Tools))
		}
		if j, dup := names[t.Name]; dup {
			add("tools[%d]: name %q is also tools[%d]'s; tool names must be unique", i, t.Name, j)
		} else {
			names[t.Name] = i
		}
		if err := checkArgsSchema(t.Schema); err != nil {
			add("tools[%d] (%s): %v", i, t.Name, err)
		}
	}
	c := req.ToolChoice
	switch c.Mode {
	case "", ToolAuto:
	case ToolNone, ToolRequired:
		if len(req.Tools) == 0 {
			add("tool_choice %s needs tools: the request offers none", c.Mode)
		}
	case ToolNamed:
		if _, ok := names[c.Name]; !ok {
			add("tool_choice names tool %q, which the request does not offer (tools: %s)", c.Name, toolNames(req.Tools))
		}
	default:
		add("tool_choice mode %q is not auto, none, required or tool", c.Mode)
	}
	if c.Name != "" && c.Mode != ToolNamed {
		add("tool_choice names tool %q but its mode is %q: say mode tool", c.Name, c.Mode)
	}
	checkToolMessages(req.Messages, add)
	if len(problems) > 0 {
		return fmt.Errorf("request: %s", strings.Join(problems, "; "))
	}
	return nil
}

// checkToolMessages checks the tool calls and results of a conversation.
func checkToolMessages(msgs []Message, add func(string, ...any)) {
	var asked map[string]bool
	for i, m := range msgs {
		if len(m.ToolCalls) > 0 && m.Role != Assistant {
			add("messages[%d]: only assistant messages carry tool calls, this one is %s", i, m.Role)
		}
		for j, tc := range m.ToolCalls {
			if tc.ID == "" {
				add("messages[%d].tool_calls[%d]: the call has no id", i, j)
			}
			if tc.Name == "" {
				add("messages[%d].tool_calls[%d]: the call names no tool", i, j)
			}
			if asked == nil {
				asked = make(map[string]bool)
			}
			asked[tc.ID] = true
		}
		if m.Role == Tool {
			switch {
			case m.ToolCallID == "":
				add("messages[%d]: a tool message needs the tool_call_id of the call it answers", i)
			case !asked[m.ToolCallID]:
				add("messages[%d]: tool result for call %q, which no earlier assistant message asked for", i, m.ToolCallID)
			}
			continue
		}
		if m.ToolCallID != "" {
			add("messages[%d]: tool_call_id belongs to tool messages, this one is %s", i, m.Role)
		}
		if m.IsError {
			add("messages[%d]: is_error belongs to tool messages, this one is %s", i, m.Role)
		}
	}
}

// CheckToolCalls checks the calls of one reply as an adapter decoded them:
// at most MaxToolCalls, each naming a tool, and IDs unique. A call without
// an ID (some OpenAI-compatible servers send none) is given
// "call_<index>". Whether the name is a tool the request offered, and the
// arguments, are not checked: that is the caller's to report. The error is
// meant to be classed fault.Format by the adapter.
func CheckToolCalls(calls []ToolCall) error {
	if len(calls) > MaxToolCalls {
		return fmt.Errorf("the reply asks for %d tool calls; at most %d are accepted in one reply (model.MaxToolCalls): ask for fewer at a time", len(calls), MaxToolCalls)
	}
	for i := range calls {
		if calls[i].Name == "" {
			return fmt.Errorf("tool_calls[%d] names no tool", i)
		}
		if calls[i].ID == "" {
			calls[i].ID = "call_" + strconv.Itoa(i)
		}
		for j := range i {
			if calls[j].ID == calls[i].ID {
				return fmt.Errorf("tool_calls[%d] repeats the id %q of tool_calls[%d]: a result could not be paired with its call", i, calls[i].ID, j)
			}
		}
	}
	return nil
}

// checkArgsSchema checks a tool's argument schema: absent, or a JSON object
// whose "type", when given, is "object".
func checkArgsSchema(s json.RawMessage) error {
	if len(bytes.TrimSpace(s)) == 0 {
		return nil
	}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(s, &root); err != nil {
		return fmt.Errorf("the arguments' schema is not a JSON object: %w", err)
	}
	if t, ok := root["type"]; ok && !bytes.Equal(bytes.TrimSpace(t), []byte(`"object"`)) {
		return fmt.Errorf("the arguments' schema has type %s; tool arguments are an object (type: object)", cutText(string(t), 40))
	}
	return nil
}

func validToolName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func toolNames(tools []ToolDef) string {
	if len(tools) == 0 {
		return "none"
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// cutText cuts s to at most n bytes on a UTF-8 boundary, "…" marking a cut.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return truncate(s, n) + "…"
}
