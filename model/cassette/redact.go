package cassette

import "github.com/reinhq/rein/redact"

// Redacted replaces every secret the recorder writes.
const Redacted = redact.Mask

// redactExchange hides the secrets red knows in x, in place: messages
// (tool call arguments and results included), reply and the reply's tool
// call arguments as text, the error as a message (see
// redact.Redactor.Message). x must own its messages and tool calls.
func redactExchange(red *redact.Redactor, x *Exchange) {
	for i := range x.Request.Messages {
		m := &x.Request.Messages[i]
		m.Content = red.String(m.Content)
		for j := range m.ToolCalls {
			m.ToolCalls[j].Args = red.String(m.ToolCalls[j].Args)
		}
	}
	if x.Response != nil {
		x.Response.Text = red.String(x.Response.Text)
		for j := range x.Response.ToolCalls {
			x.Response.ToolCalls[j].Args = red.String(x.Response.ToolCalls[j].Args)
		}
	}
	if x.Error != nil {
		x.Error.Message = red.Message(x.Error.Message)
	}
}
