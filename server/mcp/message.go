package mcp

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
)

// idTable keeps the ids of one session's open requests. The SDK reads an
// id as an int64 or a string and writes it back re-encoded (a big integer
// overflowed, 1.5 came back as 1, an escape was lost), so each request's
// id is replaced by a token the SDK keeps exactly (a small integer) on the
// way in, and the id as sent, raw JSON, is put back in the answer on the
// way out. Ids of the server's own requests (and the client's answers to
// them) are not touched. It is safe for concurrent use.
type idTable struct {
	mu   sync.Mutex
	next int64
	raw  map[int64]openID // token → id as sent
	open map[string]int64 // scope and id as sent → its newest open token (notifications/cancelled)
	// answered is closed when the last open request is answered; nil
	// while none is open.
	answered chan struct{}
}

// openID is an open request's id as sent and the key of its entry in
// idTable.open.
type openID struct {
	raw []byte
	key string
}

// openKey keys an id in idTable.open: ids are the client's, so one
// session's (scope's) id never names another session's request.
func openKey(scope string, raw []byte) string { return scope + "\x00" + string(raw) }

// wait returns once every request given a token is answered, or ctx ends.
func (t *idTable) wait(ctx context.Context) {
	t.mu.Lock()
	ch := t.answered
	t.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// token returns a new token standing for raw, an id of scope's (a
// session's), until restore takes it.
func (t *idTable) token(scope string, raw []byte) []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.raw == nil {
		t.raw, t.open = map[int64]openID{}, map[string]int64{}
	}
	t.next++
	if len(t.raw) == 0 {
		t.answered = make(chan struct{})
	}
	key := openKey(scope, raw)
	t.raw[t.next] = openID{raw: append([]byte(nil), raw...), key: key}
	t.open[key] = t.next
	return strconv.AppendInt(nil, t.next, 10)
}

// find returns the token of scope's open request whose id is raw.
func (t *idTable) find(scope string, raw []byte) ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.open[openKey(scope, raw)]
	if !ok {
		return nil, false
	}
	return strconv.AppendInt(nil, n, 10), true
}

// restore returns the id a token stands for and forgets the token (its
// request is answered once).
func (t *idTable) restore(token []byte) ([]byte, bool) {
	n, err := strconv.ParseInt(string(token), 10, 64)
	if err != nil {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.raw[n]
	if !ok {
		return nil, false
	}
	delete(t.raw, n)
	if t.open[id.key] == n {
		delete(t.open, id.key)
	}
	if len(t.raw) == 0 {
		close(t.answered)
		t.answered = nil
	}
	return id.raw, true
}

// tooLongMessage is the error message of a message over MaxMessageBytes.
var tooLongMessage = "Invalid Request: the message is longer than " + strconv.Itoa(MaxMessageBytes) + " bytes; send less per message"

// admit checks one incoming message before the SDK decodes it: its size
// (MaxMessageBytes), its nesting (MaxDepth), its values (MaxValues) and its JSON-RPC 2.0 shape (an
// object, "jsonrpc": "2.0", each key once, an id that is a string or a
// number, a method that is a string, params an object or an array). It
// returns the message for the SDK, its request id replaced by a token of
// ids (and the id a notifications/cancelled names, while that request is
// open), or else the JSON-RPC error answer, carrying the message's id when
// it could be read.
func admit(msg []byte, ids *idTable) (pass, answer []byte) { return admitIn(msg, ids, "") }

// admitIn is admit for the messages of one scope (an HTTP session) of a
// table several scopes share.
func admitIn(msg []byte, ids *idTable, scope string) (pass, answer []byte) {
	if len(msg) > MaxMessageBytes {
		return nil, rpcError(nil, codeInvalidRequest, tooLongMessage)
	}
	members, ferr := scanFrame(msg, MaxDepth, MaxValues)
	if ferr != nil {
		var id []byte
		if ferr.code != codeParseError { // valid JSON, too deep or too many values: the id may be read
			if all, err := scanFrame(msg, len(msg)+1, len(msg)+1); err == nil {
				id = idOf(msg, all)
			}
		}
		return nil, rpcError(id, ferr.code, ferr.msg)
	}
	if members == nil {
		return nil, rpcError(nil, codeInvalidRequest, "Invalid Request: a message is one JSON object (batches are not supported)")
	}
	m := make(map[string]member, len(members))
	for _, mb := range members {
		if _, twice := m[mb.key]; twice {
			return nil, rpcError(nil, codeInvalidRequest, "Invalid Request: the key "+strconv.Quote(mb.key)+" appears twice")
		}
		m[mb.key] = mb
	}
	span := func(k string) []byte {
		if mb, ok := m[k]; ok {
			return msg[mb.start:mb.end]
		}
		return nil
	}
	id := span("id")
	if len(id) > 0 && id[0] != '"' && id[0] != 'n' && id[0] != '-' && (id[0] < '0' || id[0] > '9') {
		return nil, rpcError(nil, codeInvalidRequest, "Invalid Request: id must be a string or a number")
	}
	if string(span("jsonrpc")) != `"2.0"` {
		return nil, rpcError(id, codeInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`)
	}
	method := span("method")
	if method == nil {
		_, result := m["result"]
		e := span("error")
		if len(id) > 0 && (result || (len(e) > 0 && e[0] == '{')) {
			return msg, nil // the client's answer to a request of the server's
		}
		return nil, rpcError(id, codeInvalidRequest, "Invalid Request: a message has a method, or an id with a result or an error")
	}
	var name string
	if json.Unmarshal(method, &name) != nil {
		return nil, rpcError(id, codeInvalidRequest, "Invalid Request: method must be a string")
	}
	params := span("params")
	if len(params) > 0 && params[0] != '{' && params[0] != '[' && string(params) != "null" {
		return nil, rpcError(id, -32602, "Invalid params: params must be an object")
	}
	if string(id) == "null" {
		return nil, rpcError(id, codeInvalidRequest, "Invalid Request: a request's id must be a string or a number, not null (MCP); leave id out for a notification")
	}
	if id != nil {
		mb := m["id"]
		return splice(msg, mb.start, mb.end, ids.token(scope, id)), nil
	}
	if name == "notifications/cancelled" && len(params) > 0 && params[0] == '{' {
		p := m["params"]
		if inner, err := scanFrame(params, MaxDepth, MaxValues); err == nil {
			for _, mb := range inner {
				if mb.key == "requestId" {
					if tok, ok := ids.find(scope, params[mb.start:mb.end]); ok {
						return splice(msg, p.start+mb.start, p.start+mb.end, tok), nil
					}
				}
			}
		}
	}
	return msg, nil
}

// restoreID puts back the id a client sent in an answer of the SDK's
// (a message with an id and no method) whose id is a token of ids; any
// other message is returned as it is.
func restoreID(msg []byte, ids *idTable) []byte {
	members, err := scanFrame(msg, len(msg)+1, len(msg)+1)
	if err != nil {
		return msg
	}
	var at *member
	for i := range members {
		switch members[i].key {
		case "method":
			return msg
		case "id":
			at = &members[i]
		}
	}
	if at == nil {
		return msg
	}
	raw, ok := ids.restore(msg[at.start:at.end])
	if !ok {
		return msg
	}
	return splice(msg, at.start, at.end, raw)
}

// idOf is the raw id of a scanned message when it is a string or a
// number, else nil.
func idOf(msg []byte, members []member) []byte {
	for _, mb := range members {
		if mb.key == "id" {
			if id := msg[mb.start:mb.end]; id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9') {
				return id
			}
		}
	}
	return nil
}

// splice returns a copy of b with b[start:end] replaced by with.
func splice(b []byte, start, end int, with []byte) []byte {
	out := make([]byte, 0, len(b)-(end-start)+len(with))
	out = append(out, b[:start]...)
	out = append(out, with...)
	return append(out, b[end:]...)
}

// rpcError is a JSON-RPC error response line; a nil id is null. The id is
// written byte for byte as the client sent it.
func rpcError(id []byte, code int, msg string) []byte {
	if len(id) == 0 {
		id = []byte("null")
	}
	text, _ := json.Marshal(msg)
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = append(b, text...)
	return append(b, "}}\n"...)
}
