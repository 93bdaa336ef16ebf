package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineBytes bounds one JSON-RPC message read on stdio.
const MaxLineBytes = sdk.DefaultMaxLineLength

// ServeStdio serves one session of newline-delimited JSON-RPC read from in
// and written to out, until in ends or ctx does. out must be the process's
// own stream, unaltered: a writer that rewrote bytes (escaping, redaction)
// would break the framing; answers are redacted before they are encoded.
//
// A line that is not a JSON-RPC 2.0 message (not JSON, not an object, no
// "jsonrpc": "2.0", a method that is not a string, longer than
// MaxLineBytes) is answered with a JSON-RPC error (-32700 parse error or
// -32600 invalid request) and the session goes on; the SDK alone would end
// the session on it.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	w := &lineWriter{w: out}
	f := &frameFilter{r: bufio.NewReaderSize(in, 64<<10), w: w}
	return s.sdk.Run(ctx, &sdk.IOTransport{Reader: f, Writer: w})
}

// lineWriter writes whole lines only, one at a time, so the SDK's frames
// and the filter's error answers never interleave.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
		if _, err := l.w.Write(l.buf[:i+1]); err != nil {
			return 0, err
		}
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
	return len(p), nil
}

func (l *lineWriter) Close() error { return nil }

// frameFilter passes on the lines that are JSON-RPC messages and answers
// the others itself.
type frameFilter struct {
	r       *bufio.Reader
	w       *lineWriter
	pending []byte
}

func (f *frameFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		line, err := f.readLine()
		if len(bytes.TrimSpace(line)) > 0 {
			if problem := f.check(line); problem != nil {
				if _, werr := f.w.Write(problem); werr != nil {
					return 0, werr
				}
			} else {
				f.pending = append(line, '\n')
			}
		}
		if err != nil && len(f.pending) == 0 {
			return 0, err
		}
		if err != nil {
			break
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

func (f *frameFilter) Close() error { return nil }

// readLine returns the next line without its newline; a line longer than
// MaxLineBytes is skipped and returned as a marker the check refuses.
func (f *frameFilter) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := f.r.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLineBytes {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = f.r.ReadSlice('\n')
			}
			return tooLong, ignoreEOFAfterLine(err)
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

func ignoreEOFAfterLine(err error) error {
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil
	}
	return err
}

// tooLong stands for a line over MaxLineBytes: it is not JSON.
var tooLong = []byte{0}

// check returns the JSON-RPC error answer to line, or nil when it is a
// message the SDK can take.
func (f *frameFilter) check(line []byte) []byte {
	if bytes.Equal(line, tooLong) {
		return rpcError(nil, -32600, fmt.Sprintf("Invalid Request: a message is longer than %d bytes", MaxLineBytes))
	}
	if !json.Valid(line) {
		return rpcError(nil, -32700, "Parse error: the line is not JSON")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return rpcError(nil, -32600, "Invalid Request: a message is a JSON object (batches are not supported)")
	}
	id := m["id"]
	if len(id) > 0 && id[0] != '"' && id[0] != 'n' && (id[0] < '0' || id[0] > '9') && id[0] != '-' {
		return rpcError(nil, -32600, "Invalid Request: id must be a string or a number")
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return rpcError(id, -32600, `Invalid Request: "jsonrpc" must be "2.0"`)
	}
	if method, ok := m["method"]; ok {
		var name string
		if json.Unmarshal(method, &name) != nil {
			return rpcError(id, -32600, "Invalid Request: method must be a string")
		}
		if p, ok := m["params"]; ok && len(p) > 0 && p[0] != '{' && p[0] != '[' && string(p) != "null" {
			return rpcError(id, -32602, "Invalid params: params must be an object")
		}
		return nil
	}
	if _, ok := m["result"]; ok && len(id) > 0 {
		return nil
	}
	if e, ok := m["error"]; ok && len(id) > 0 && len(e) > 0 && e[0] == '{' {
		return nil
	}
	return rpcError(id, -32600, "Invalid Request: a message has a method, or an id with a result or an error")
}

// rpcError is a JSON-RPC error response line; a nil id is null.
func rpcError(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	return append(b, '\n')
}
