package mcp

import (
	"bytes"
	"errors"
	"io"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Handler returns the streamable-HTTP handler (one MCP session per
// client, all served by s), to mount at /mcp. A call is answered with one
// application/json body rather than an event stream: rein's tools send no
// progress notifications, and the round trip costs about half as much.
//
// A POST body is checked before the SDK decodes it, as ServeStdio checks
// a line (admit): one longer than MaxMessageBytes is refused with 413,
// one that is not a JSON-RPC 2.0 message (not JSON, a batch, nested deeper
// than MaxDepth, a request id that is null, …) with 400; each with a
// JSON-RPC error body (-32700 or -32600, with the id when it could be
// read). Every answer carries the request's id exactly as the client
// wrote it (a big integer, 1.5, "\u0041" alike).
func (s *Server) Handler() http.Handler {
	return admitBodies(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk }, &sdk.StreamableHTTPOptions{JSONResponse: true}), &idTable{})
}

// sessionHeader is the header naming a streamable-HTTP session.
const sessionHeader = "Mcp-Session-Id"

// admitBodies checks each POST body with admit before next reads it,
// replacing a request's id by a token of ids (scoped to the body's
// session), and puts the id as sent back in the JSON answer.
func admitBodies(next http.Handler, ids *idTable) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxMessageBytes))
		if err != nil {
			if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
				refuseBody(w, http.StatusRequestEntityTooLarge, rpcError(nil, codeInvalidRequest, tooLongMessage))
				return
			}
			refuseBody(w, http.StatusBadRequest, rpcError(nil, codeParseError, "Parse error: the body could not be read: "+err.Error()))
			return
		}
		pass, answer := admitIn(body, ids, r.Header.Get(sessionHeader))
		if answer != nil {
			refuseBody(w, http.StatusBadRequest, answer)
			return
		}
		token := requestToken(pass)
		if token == nil { // a notification or an answer: nothing to restore
			serveBody(next, w, r, pass)
			return
		}
		// The token is forgotten however the SDK answers (a session it
		// does not know is a plain-text 404).
		defer ids.restore(token)
		rw := &idWriter{ResponseWriter: w, ids: ids}
		serveBody(next, rw, r, pass)
		rw.finish()
	})
}

// serveBody serves r with body in place of what it read.
func serveBody(next http.Handler, w http.ResponseWriter, r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	next.ServeHTTP(w, r)
}

// requestToken is the id of an admitted request (a token of the table),
// nil for a message without a method or an id.
func requestToken(msg []byte) []byte {
	members, err := scanFrame(msg, len(msg)+1, len(msg)+1)
	if err != nil {
		return nil
	}
	var id []byte
	method := false
	for _, mb := range members {
		switch mb.key {
		case "id":
			id = msg[mb.start:mb.end]
		case "method":
			method = true
		}
	}
	if !method {
		return nil
	}
	return id
}

// idWriter holds back an application/json answer until the handler is
// done, so the id it carries (a token) can be restored; any other body
// (an event stream, plain text) goes through as it is.
type idWriter struct {
	http.ResponseWriter
	ids    *idTable
	status int
	held   bool
	buf    []byte
}

// hold reports whether the body is held: decided at the first header
// or byte written, by the Content-Type the SDK set.
func (w *idWriter) hold() bool {
	if w.status == 0 {
		w.status = http.StatusOK
		w.held = w.Header().Get("Content-Type") == "application/json"
		if !w.held {
			w.ResponseWriter.WriteHeader(w.status)
		}
	}
	return w.held
}

func (w *idWriter) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	w.held = w.Header().Get("Content-Type") == "application/json"
	if !w.held {
		w.ResponseWriter.WriteHeader(status)
	}
}

func (w *idWriter) Write(p []byte) (int, error) {
	if !w.hold() {
		return w.ResponseWriter.Write(p)
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// Flush flushes what is not held.
func (w *idWriter) Flush() {
	if w.status != 0 && !w.held {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *idWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes a held answer with its id restored.
func (w *idWriter) finish() {
	if !w.held {
		return
	}
	body := restoreID(bytes.TrimRight(w.buf, "\n"), w.ids)
	w.ResponseWriter.WriteHeader(w.status)
	_, _ = w.ResponseWriter.Write(body)
}

// refuseBody answers a POST with status and the JSON-RPC error answer.
func refuseBody(w http.ResponseWriter, status int, answer []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}
