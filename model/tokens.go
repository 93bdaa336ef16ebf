package model

// BytesPerToken is rein's estimate of the bytes of one token, for
// EstimateTokens (and the scripted model's usage).
const BytesPerToken = 4

// EstimateTokens is rein's estimate of the tokens of req as a provider
// would count its input: every message's role, content, tool call names
// and arguments and tool call ids, and every tool definition's name,
// description and schema, at BytesPerToken bytes a token, rounded up.
// It reads no tokenizer: the same request always has the same estimate,
// which is what an agent's context budget (agent.yaml context:) holds a
// request to.
func EstimateTokens(req *Request) int {
	n := 0
	for i := range req.Messages {
		n += MessageBytes(&req.Messages[i])
	}
	for i := range req.Tools {
		d := &req.Tools[i]
		n += len(d.Name) + len(d.Description) + len(d.Schema)
	}
	return (n + BytesPerToken - 1) / BytesPerToken
}

// MessageBytes is what m counts in EstimateTokens, in bytes.
func MessageBytes(m *Message) int {
	n := len(m.Role) + len(m.Content) + len(m.ToolCallID)
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Args)
	}
	return n
}
