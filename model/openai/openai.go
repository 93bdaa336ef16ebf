package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/internal/httperr"
	"github.com/reinhq/rein/model/internal/schemacache"
)

// DefaultBaseURL is the OpenAI API root.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultTimeout bounds one call when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Minute

// Structured says how a request's schema is passed to the server.
type Structured string

// Structured-output modes.
const (
	// JSONSchema sends response_format json_schema with strict: true, the
	// schema made strict-compatible (OpenAI, vLLM, Ollama, LM Studio).
	JSONSchema Structured = "json_schema"
	// JSONObject sends response_format json_object (JSON mode): the server
	// promises JSON, the engine checks the schema (DeepSeek, older servers).
	JSONObject Structured = "json_object"
	// NoFormat sends no response_format; the schema travels only in the
	// prompt.
	NoFormat Structured = "none"
)

// Config configures a Model. Only the key comes from outside (the caller
// reads it from the environment); every other field has a default.
type Config struct {
	// BaseURL is the API root the client posts chat/completions under.
	// Defaults to DefaultBaseURL; e.g. https://api.deepseek.com,
	// http://localhost:11434/v1 (Ollama), http://localhost:8000/v1 (vLLM).
	BaseURL string
	// APIKey is sent as a bearer token. Empty sends none (local servers).
	APIKey string
	// APIKeyEnv is the environment variable the key was read from; an
	// error for a refused key names it. Defaults to "OPENAI_API_KEY".
	APIKeyEnv string
	// Model is the model to ask for. When empty, each request's Model is
	// used.
	Model string
	// Structured is how a request's schema is sent. Defaults to
	// JSONSchema for DefaultBaseURL and JSONObject for any other server.
	Structured Structured
	// MaxTokens caps the reply's tokens; zero leaves the server's default.
	// It is sent as max_completion_tokens to OpenAI and as max_tokens to
	// other servers, which mostly know only that name.
	MaxTokens int
	// Timeout bounds each call (ctx may bound it sooner). Defaults to
	// DefaultTimeout; negative means no bound but ctx's.
	Timeout time.Duration
	// HTTPClient sends the requests. Defaults to a client on
	// http.DefaultTransport.
	HTTPClient *http.Client
}

// Model is a model.Model that talks the Chat Completions API. It is safe
// for concurrent use.
type Model struct {
	cfg      Config
	svc      sdk.ChatCompletionService
	api      httperr.API
	official bool
	schemas  schemacache.Cache[preparedSchema]
}

var _ model.Model = (*Model)(nil)

// New returns a Model for cfg. It fails when BaseURL is not an http(s) URL
// or Structured is not one of the modes.
func New(cfg Config) (*Model, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base_url %q is not an http(s) URL", cfg.BaseURL)
	}
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = "OPENAI_API_KEY"
	}
	official := u.Host == "api.openai.com"
	switch cfg.Structured {
	case "":
		cfg.Structured = JSONObject
		if official {
			cfg.Structured = JSONSchema
		}
	case JSONSchema, JSONObject, NoFormat:
	default:
		return nil, fmt.Errorf("openai: structured %q is not json_schema, json_object or none", cfg.Structured)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport}
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(hc),
		// The engine owns retries (fault classes, Retry-After).
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	// NewChatCompletionService, unlike sdk.NewClient, reads nothing from
	// the environment (OPENAI_BASE_URL, OPENAI_ORG_ID, …): the config says
	// everything.
	return &Model{cfg: cfg, svc: sdk.NewChatCompletionService(opts...), api: httperr.API{
		Name: "openai", Host: u.Host, BaseURL: cfg.BaseURL, Key: cfg.APIKey, KeyEnv: cfg.APIKeyEnv, RequestIDHeader: "X-Request-Id",
	}, official: official}, nil
}

// Generate sends req as one chat completion. Errors are classed: 408, 429,
// 5xx, network errors and a passed deadline are transient (with the
// server's Retry-After attached), a reply cut off by the token limit is a
// format error, and so is a reply with more than model.MaxToolCalls tool
// calls; refusals, other 4xx and a request model.CheckRequest rejects are
// business errors. A Response with the usage is returned beside a
// truncation, refusal or tool-call error. When ctx carries a
// model.DeltaFunc (model.DeltasOf), the reply is streamed and its text
// handed to it as it arrives; the Response is the same (stream.go).
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	name := m.cfg.Model
	if name == "" {
		name = req.Model
	}
	if name == "" {
		return nil, fault.Errorf(fault.Business, "openai: no model to ask for: name one in the config (model:) or the request")
	}
	if err := model.CheckRequest(req); err != nil {
		return nil, fault.BusinessErr(fmt.Errorf("openai: %w", err))
	}
	params, sh, err := m.params(name, req)
	if err != nil {
		return nil, fault.BusinessErr(err)
	}
	if m.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.cfg.Timeout)
		defer cancel()
	}
	if fn := model.DeltasOf(ctx, req); fn != nil {
		return m.stream(ctx, name, params, sh, fn)
	}
	var httpResp *http.Response
	var c completion
	// The SDK builds and sends the request; the reply is decoded into the
	// few fields the adapter maps rather than the SDK's full
	// ChatCompletion, which costs more than everything else in a call.
	if _, err := m.svc.New(ctx, params, option.WithResponseInto(&httpResp), option.WithResponseBodyInto(&c)); err != nil {
		return nil, m.api.Fail(ctx, name, httpResp, err)
	}
	return m.response(name, &c, sh)
}

// completion is the part of a chat.completion object the adapter reads
// (field names as in the API reference and sdk.ChatCompletion).
type completion struct {
	Model   string     `json:"model"`
	Choices []choiceOf `json:"choices"`
	Usage   struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// choiceOf is one choice of a completion.
type choiceOf struct {
	FinishReason string `json:"finish_reason"`
	Message      struct {
		Content   string     `json:"content"`
		Refusal   string     `json:"refusal"`
		ToolCalls []toolCall `json:"tool_calls"`
	} `json:"message"`
}

func (m *Model) response(name string, c *completion, sh shape) (*model.Response, error) {
	resp := &model.Response{
		Model: c.Model,
		Usage: model.Usage{In: int(c.Usage.PromptTokens), Out: int(c.Usage.CompletionTokens)},
	}
	if len(c.Choices) == 0 {
		return resp, fault.Errorf(fault.Format, "openai: %s: the response holds no choices", name)
	}
	ch := c.Choices[0]
	if r := strings.TrimSpace(ch.Message.Refusal); r != "" {
		return resp, fault.Errorf(fault.Business, "openai: %s refused to answer: %s", name, m.api.Redact(r))
	}
	resp.Text = ch.Message.Content
	calls, err := toolCalls(name, ch.Message.ToolCalls)
	if err != nil {
		return resp, err
	}
	resp.ToolCalls = calls
	switch ch.FinishReason {
	case "length":
		return resp, fault.Errorf(fault.Format, "openai: %s: the reply was cut off at the token limit after %d output tokens (finish_reason: length); raise max_tokens or ask for less", name, resp.Usage.Out)
	case "content_filter":
		return resp, fault.Errorf(fault.Business, "openai: %s: the provider's content filter withheld the reply (finish_reason: content_filter)", name)
	}
	resp.Text = restoreAnswer(resp.Text, sh)
	return resp, nil
}
