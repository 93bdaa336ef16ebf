package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/internal/httperr"
	"github.com/reinhq/rein/model/internal/schemacache"
)

// DefaultBaseURL is the Anthropic API root.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens is the reply cap when Config.MaxTokens is zero; the
// Messages API requires one.
const DefaultMaxTokens = 4096

// DefaultTimeout bounds one call when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Minute

// AnswerTool is the name of the tool a structured request forces the
// model to call; its input is the answer.
const AnswerTool = "answer"

// Config configures a Model. Only the key comes from outside (the caller
// reads it from the environment); every other field has a default.
type Config struct {
	// BaseURL is the API root the client posts v1/messages under.
	// Defaults to DefaultBaseURL.
	BaseURL string
	// APIKey is sent as the x-api-key header.
	APIKey string
	// APIKeyEnv is the environment variable the key was read from; an
	// error for a refused key names it. Defaults to "ANTHROPIC_API_KEY".
	APIKeyEnv string
	// Model is the model to ask for. When empty, each request's Model is
	// used.
	Model string
	// MaxTokens caps the reply's tokens. Defaults to DefaultMaxTokens.
	MaxTokens int
	// Timeout bounds each call (ctx may bound it sooner). Defaults to
	// DefaultTimeout; negative means no bound but ctx's.
	Timeout time.Duration
	// HTTPClient sends the requests. Defaults to a client on
	// http.DefaultTransport.
	HTTPClient *http.Client
}

// Model is a model.Model that talks the Messages API. It is safe for
// concurrent use.
type Model struct {
	cfg     Config
	svc     sdk.MessageService
	api     httperr.API
	schemas schemacache.Cache[preparedSchema]
}

var _ model.Model = (*Model)(nil)

// New returns a Model for cfg. It fails when BaseURL is not an http(s) URL
// or MaxTokens is negative.
func New(cfg Config) (*Model, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: base_url %q is not an http(s) URL", cfg.BaseURL)
	}
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = "ANTHROPIC_API_KEY"
	}
	switch {
	case cfg.MaxTokens < 0:
		return nil, fmt.Errorf("anthropic: max_tokens %d is negative", cfg.MaxTokens)
	case cfg.MaxTokens == 0:
		cfg.MaxTokens = DefaultMaxTokens
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport}
	}
	// An explicit request timeout also keeps the SDK from refusing large
	// max_tokens without streaming; ctx and cfg.Timeout bound the call.
	sdkTimeout := 365 * 24 * time.Hour
	if cfg.Timeout > 0 {
		sdkTimeout = cfg.Timeout
	}
	opts := []option.RequestOption{
		// Nothing from the environment (ANTHROPIC_BASE_URL, profiles, …):
		// the config says everything.
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(hc),
		// The engine owns retries (fault classes, Retry-After).
		option.WithMaxRetries(0),
		option.WithRequestTimeout(sdkTimeout),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &Model{cfg: cfg, svc: sdk.NewClient(opts...).Messages, api: httperr.API{
		Name: "anthropic", Host: u.Host, BaseURL: cfg.BaseURL, Key: cfg.APIKey, KeyEnv: cfg.APIKeyEnv, RequestIDHeader: "Request-Id",
	}}, nil
}

// Generate sends req as one Messages call. Errors are classed: 408, 429,
// 5xx, network errors and a passed deadline are transient (with the
// server's Retry-After attached), a reply cut off at max_tokens is a
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
		return nil, fault.Errorf(fault.Business, "anthropic: no model to ask for: name one in the config (model:) or the request")
	}
	if err := model.CheckRequest(req); err != nil {
		return nil, fault.BusinessErr(fmt.Errorf("anthropic: %w", err))
	}
	params, ps, err := m.params(name, req)
	if err != nil {
		return nil, fault.BusinessErr(err)
	}
	if m.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.cfg.Timeout)
		defer cancel()
	}
	if fn := model.DeltasOf(ctx, req); fn != nil {
		return m.stream(ctx, name, params, ps, fn)
	}
	var httpResp *http.Response
	var msg message
	// The SDK builds and sends the request; the reply is decoded into the
	// few fields the adapter maps rather than the SDK's full Message, which
	// costs as much as everything else in a call.
	if _, err := m.svc.New(ctx, params, option.WithResponseInto(&httpResp), option.WithResponseBodyInto(&msg)); err != nil {
		return nil, m.api.Fail(ctx, name, httpResp, err)
	}
	return m.response(name, &msg, ps)
}

// message is the part of a Messages API message object the adapter reads
// (field names as in the API reference and sdk.Message).
type message struct {
	Model       string         `json:"model"`
	Content     []block        `json:"content"`
	StopReason  sdk.StopReason `json:"stop_reason"`
	StopDetails struct {
		Explanation string `json:"explanation"`
	} `json:"stop_details"`
	Usage struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// block is one content block of a message.
type block struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

func (m *Model) response(name string, msg *message, ps *preparedSchema) (*model.Response, error) {
	u := msg.Usage
	resp := &model.Response{
		Model: msg.Model,
		Usage: model.Usage{In: int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens), Out: int(u.OutputTokens)},
	}
	var text strings.Builder
	var answer []byte
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			if ps != nil {
				if b.Name == AnswerTool {
					answer = b.Input
				}
				continue
			}
			resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{ID: b.ID, Name: b.Name, Args: string(b.Input)})
		}
	}
	resp.Text = text.String()
	if err := toolCalls(name, resp.ToolCalls); err != nil {
		resp.ToolCalls = nil
		return resp, err
	}
	switch msg.StopReason {
	case sdk.StopReasonRefusal:
		why := strings.TrimSpace(msg.StopDetails.Explanation)
		if why == "" {
			why = strings.TrimSpace(resp.Text)
		}
		if why == "" {
			why = "no explanation given"
		}
		return resp, fault.Errorf(fault.Business, "anthropic: %s refused to answer (stop_reason: refusal): %s", name, m.api.Redact(why))
	case sdk.StopReasonMaxTokens:
		return resp, fault.Errorf(fault.Format, "anthropic: %s: the reply was cut off at the token limit after %d output tokens (stop_reason: max_tokens, max_tokens %d); raise max_tokens or ask for less", name, resp.Usage.Out, m.cfg.MaxTokens)
	case sdk.StopReasonModelContextWindowExceeded:
		return resp, fault.Errorf(fault.Format, "anthropic: %s: the reply was cut off at the model's context window (stop_reason: model_context_window_exceeded); send less", name)
	}
	if answer != nil {
		resp.Text = ps.unwrap(answer)
	}
	return resp, nil
}
