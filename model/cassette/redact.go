package cassette

import "github.com/reinhq/rein/redact"

// Redacted replaces every secret the recorder writes.
const Redacted = redact.Mask

// redactExchange hides the secrets red knows in x, in place: messages and
// reply as text, the error as a message (see redact.Redactor.Message).
func redactExchange(red *redact.Redactor, x *Exchange) {
	for i := range x.Request.Messages {
		x.Request.Messages[i].Content = red.String(x.Request.Messages[i].Content)
	}
	if x.Response != nil {
		x.Response.Text = red.String(x.Response.Text)
	}
	if x.Error != nil {
		x.Error.Message = red.Message(x.Error.Message)
	}
}
