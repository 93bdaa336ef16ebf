package anthropic_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"

	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/modeltest"
)

// The response bodies follow the Messages API reference
// (https://docs.anthropic.com/en/api/messages, errors at
// https://docs.anthropic.com/en/api/errors) and the anthropic-sdk-go
// types: field names, nesting and nulls as the server sends them.

func message(r modeltest.Reply, stop string, content ...any) map[string]any {
	if content == nil {
		content = []any{}
	}
	return map[string]any{
		"id":            "msg_013Zva2CMHLNnXjNJJKqJ2EF",
		"type":          "message",
		"role":          "assistant",
		"model":         r.Model,
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens":                r.In,
			"output_tokens":               r.Out,
			"cache_creation_input_tokens": 0,
			"cache_read_input_tokens":     0,
			"service_tier":                "standard",
		},
	}
}

func textBlock(text string) map[string]any {
	return map[string]any{"type": "text", "text": text}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_011CSHoEeqs5C35K2UUqR7Fy")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// sentRequest is the part of a Messages request the fixtures read.
type sentRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	System    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"system"`
	Messages []struct {
		Role    string      `json:"role"`
		Content []sentBlock `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"input_schema"`
	} `json:"tools"`
	ToolChoice *struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	} `json:"tool_choice"`
}

func wire() modeltest.Wire {
	return modeltest.Wire{
		Path:         "/v1/messages",
		CheckRequest: checkRequest,
		Text: func(w http.ResponseWriter, r modeltest.Reply) {
			writeJSON(w, 200, message(r, "end_turn", textBlock(r.Text)))
		},
		Structured: func(w http.ResponseWriter, body []byte, r modeltest.Reply) {
			var sent sentRequest
			_ = json.Unmarshal(body, &sent)
			name := "?"
			if len(sent.Tools) > 0 {
				name = sent.Tools[0].Name
			}
			writeJSON(w, 200, message(r, "tool_use", map[string]any{
				"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": name, "input": r.Answer,
			}))
		},
		Truncated: func(w http.ResponseWriter, r modeltest.Reply) {
			writeJSON(w, 200, message(r, "max_tokens", textBlock(r.Text)))
		},
		Refusal: func(w http.ResponseWriter, r modeltest.Reply) {
			m := message(r, "refusal")
			m["stop_details"] = map[string]any{"type": "refusal", "category": nil, "explanation": r.Text}
			writeJSON(w, 200, m)
		},
		ToolCalls: func(w http.ResponseWriter, r modeltest.Reply) {
			var content []any
			if r.Text != "" {
				content = append(content, textBlock(r.Text))
			}
			for _, tc := range r.Calls {
				var input any = json.RawMessage(tc.Args)
				if !json.Valid([]byte(tc.Args)) {
					input = tc.Args
				}
				content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": input})
			}
			writeJSON(w, 200, message(r, "tool_use", content...))
		},
		ArgsOnWire: func(args string) string {
			b, _ := json.Marshal(args)
			return string(b)
		},
		Error: func(w http.ResponseWriter, status int, message string) {
			typ := map[int]string{
				400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
				404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
				500: "api_error", 529: "overloaded_error",
			}[status]
			if typ == "" {
				typ = "api_error"
			}
			writeJSON(w, status, map[string]any{
				"type":       "error",
				"error":      map[string]any{"type": typ, "message": message},
				"request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
			})
		},
	}
}

func checkRequest(r *http.Request, body []byte, req *model.Request, apiKey string) error {
	// The API takes the key as x-api-key or as a bearer token; SDK v2
	// sends the latter.
	if r.Header.Get("X-Api-Key") != apiKey && r.Header.Get("Authorization") != "Bearer "+apiKey {
		return fmt.Errorf("no key: x-api-key %q, authorization %q", r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"))
	}
	if r.Header.Get("Anthropic-Version") == "" {
		return fmt.Errorf("no anthropic-version header")
	}
	var sent sentRequest
	if err := json.Unmarshal(body, &sent); err != nil {
		return err
	}
	if sent.Model != req.Model || sent.MaxTokens <= 0 {
		return fmt.Errorf("model %q max_tokens %d, want %q and a positive cap", sent.Model, sent.MaxTokens, req.Model)
	}
	var system, turns []model.Message
	for _, m := range req.Messages {
		if m.Role == model.System {
			system = append(system, m)
		} else {
			turns = append(turns, m)
		}
	}
	if len(sent.System) != len(system) {
		return fmt.Errorf("%d system blocks, want %d (system messages go in system)", len(sent.System), len(system))
	}
	for i, m := range system {
		if sent.System[i].Type != "text" || sent.System[i].Text != m.Content {
			return fmt.Errorf("system[%d] = %+v, want text %q", i, sent.System[i], m.Content)
		}
	}
	want := wantTurns(turns)
	if len(sent.Messages) != len(want) {
		return fmt.Errorf("%d messages, want %d", len(sent.Messages), len(want))
	}
	for i, w := range want {
		got := sent.Messages[i]
		if got.Role != w.role || len(got.Content) != len(w.blocks) {
			return fmt.Errorf("messages[%d] = %s with %d blocks, want %s with %d", i, got.Role, len(got.Content), w.role, len(w.blocks))
		}
		for j, b := range w.blocks {
			if err := b.check(got.Content[j]); err != nil {
				return fmt.Errorf("messages[%d].content[%d]: %w", i, j, err)
			}
		}
	}
	if len(req.Tools) > 0 {
		return checkTools(sent, req)
	}
	return checkTool(sent, req)
}

// checkTool checks that a schema travels as the one tool the model must
// call.
func checkTool(sent sentRequest, req *model.Request) error {
	if len(req.Schema) == 0 {
		if len(sent.Tools) > 0 || sent.ToolChoice != nil {
			return fmt.Errorf("tools sent for a request without a schema")
		}
		return nil
	}
	if len(sent.Tools) != 1 || sent.ToolChoice == nil || sent.ToolChoice.Type != "tool" || sent.ToolChoice.Name != sent.Tools[0].Name {
		return fmt.Errorf("tools %+v tool_choice %+v, want one tool and tool_choice forcing it", sent.Tools, sent.ToolChoice)
	}
	var want map[string]any
	if err := json.Unmarshal(req.Schema, &want); err != nil {
		return err
	}
	if got := sent.Tools[0].InputSchema; !reflect.DeepEqual(got, want) {
		return fmt.Errorf("input_schema %v, want the schema %v", got, want)
	}
	return nil
}
