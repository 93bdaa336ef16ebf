package openai_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"

	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/modeltest"
)

// The response bodies follow the Chat Completions API reference
// (https://platform.openai.com/docs/api-reference/chat/object) and the
// openai-go SDK's types: field names, nesting and nulls as the server
// sends them.

func completion(r modeltest.Reply, content any, refusal any, finish string) map[string]any {
	return map[string]any{
		"id":      "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
		"object":  "chat.completion",
		"created": 1741569952,
		"model":   r.Model,
		"choices": []any{map[string]any{
			"index": 0,
			"message": map[string]any{
				"role":        "assistant",
				"content":     content,
				"refusal":     refusal,
				"annotations": []any{},
			},
			"logprobs":      nil,
			"finish_reason": finish,
		}},
		"usage": map[string]any{
			"prompt_tokens":     r.In,
			"completion_tokens": r.Out,
			"total_tokens":      r.In + r.Out,
			"prompt_tokens_details": map[string]any{
				"cached_tokens": 0, "audio_tokens": 0,
			},
			"completion_tokens_details": map[string]any{
				"reasoning_tokens": 0, "audio_tokens": 0,
				"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0,
			},
		},
		"service_tier":       "default",
		"system_fingerprint": "fp_0705bf87c0",
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// sentRequest is the part of a chat completion request the fixtures read.
type sentRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string     `json:"role"`
		Content    *string    `json:"content"`
		ToolCallID string     `json:"tool_call_id"`
		ToolCalls  []sentCall `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	ResponseFormat    *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string         `json:"name"`
			Strict bool           `json:"strict"`
			Schema map[string]any `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

// wire is the Chat Completions wire format; mode is the structured-output
// mode the adapter under test was configured with.
func wire(mode string) modeltest.Wire {
	return modeltest.Wire{
		Path: "/chat/completions",
		CheckRequest: func(r *http.Request, body []byte, req *model.Request, apiKey string) error {
			if got := r.Header.Get("Authorization"); got != "Bearer "+apiKey {
				return fmt.Errorf("Authorization header %q, want the bearer key", got)
			}
			var sent sentRequest
			if err := json.Unmarshal(body, &sent); err != nil {
				return err
			}
			if sent.Model != req.Model {
				return fmt.Errorf("model %q, want %q", sent.Model, req.Model)
			}
			if len(sent.Messages) != len(req.Messages) {
				return fmt.Errorf("%d messages, want %d", len(sent.Messages), len(req.Messages))
			}
			for i, m := range req.Messages {
				if err := checkMessage(sent, i, m); err != nil {
					return err
				}
			}
			if err := checkTools(sent, req); err != nil {
				return err
			}
			return checkFormat(sent, req, mode)
		},
		Text: func(w http.ResponseWriter, r modeltest.Reply) {
			writeJSON(w, 200, completion(r, r.Text, nil, "stop"))
		},
		Structured: func(w http.ResponseWriter, body []byte, r modeltest.Reply) {
			writeJSON(w, 200, completion(r, answerAsAsked(body, r.Answer), nil, "stop"))
		},
		Truncated: func(w http.ResponseWriter, r modeltest.Reply) {
			writeJSON(w, 200, completion(r, r.Text, nil, "length"))
		},
		Refusal: func(w http.ResponseWriter, r modeltest.Reply) {
			writeJSON(w, 200, completion(r, nil, r.Text, "stop"))
		},
		ToolCalls: func(w http.ResponseWriter, r modeltest.Reply) {
			var content any
			if r.Text != "" {
				content = r.Text
			}
			c := completion(r, content, nil, "tool_calls")
			calls := make([]any, len(r.Calls))
			for i, tc := range r.Calls {
				calls[i] = map[string]any{
					"id": tc.ID, "type": "function",
					"function": map[string]any{"name": tc.Name, "arguments": tc.Args},
				}
			}
			c["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["tool_calls"] = calls
			writeJSON(w, 200, c)
		},
		Error: func(w http.ResponseWriter, status int, message string) {
			typ, code := "invalid_request_error", any(nil)
			switch {
			case status == 401:
				code = "invalid_api_key"
			case status == 429:
				typ, code = "requests", "rate_limit_exceeded"
			case status >= 500:
				typ = "server_error"
			}
			writeJSON(w, status, map[string]any{"error": map[string]any{
				"message": message, "type": typ, "param": nil, "code": code,
			}})
		},
	}
}

// checkFormat checks response_format against the mode.
func checkFormat(sent sentRequest, req *model.Request, mode string) error {
	rf := sent.ResponseFormat
	if len(req.Schema) == 0 {
		if rf != nil {
			return fmt.Errorf("response_format %+v sent for a request without a schema", *rf)
		}
		return nil
	}
	if rf == nil {
		return fmt.Errorf("no response_format for a request with a schema")
	}
	switch mode {
	case "json_object":
		if rf.Type != "json_object" || rf.JSONSchema != nil {
			return fmt.Errorf("response_format %+v, want {type: json_object}", *rf)
		}
		return nil
	}
	if rf.Type != "json_schema" || rf.JSONSchema == nil || !rf.JSONSchema.Strict || rf.JSONSchema.Name == "" {
		return fmt.Errorf("response_format %+v, want json_schema, strict, named", *rf)
	}
	var orig map[string]any
	if err := json.Unmarshal(req.Schema, &orig); err != nil {
		return err
	}
	s := rf.JSONSchema.Schema
	props, _ := s["properties"].(map[string]any)
	if !reflect.DeepEqual(keys(props), keys(orig["properties"].(map[string]any))) {
		return fmt.Errorf("schema properties %v, want %v", keys(props), keys(orig["properties"].(map[string]any)))
	}
	var req2 []string
	for _, k := range s["required"].([]any) {
		req2 = append(req2, k.(string))
	}
	sort.Strings(req2)
	if !reflect.DeepEqual(req2, keys(props)) || s["additionalProperties"] != false {
		return fmt.Errorf("strict schema must require every property and forbid others: %v", s)
	}
	return nil
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// answerAsAsked renders answer the way a model bound to the sent schema
// writes it: with a strict schema, every property present, null for those
// it leaves out.
func answerAsAsked(body []byte, answer json.RawMessage) string {
	var sent sentRequest
	_ = json.Unmarshal(body, &sent)
	if sent.ResponseFormat == nil || sent.ResponseFormat.JSONSchema == nil || !sent.ResponseFormat.JSONSchema.Strict {
		return string(answer)
	}
	var v map[string]any
	if err := json.Unmarshal(answer, &v); err != nil {
		return string(answer)
	}
	props, _ := sent.ResponseFormat.JSONSchema.Schema["properties"].(map[string]any)
	for k := range props {
		if _, ok := v[k]; !ok {
			v[k] = nil
		}
	}
	out, _ := json.Marshal(v)
	return string(out)
}
