package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves one session of newline-delimited JSON-RPC read from in
// and written to out, until in ends or ctx does. out must be the process's
// own stream, unaltered: a writer that rewrote bytes (escaping, redaction)
// would break the framing; answers are redacted before they are encoded.
//
// Each line is checked before the SDK decodes it: a line that is not a
// JSON-RPC 2.0 message (not JSON, not an object, no "jsonrpc": "2.0", a
// key twice, a method that is not a string, a request id that is null),
// longer than MaxMessageBytes or nested deeper than MaxDepth is answered
// with a JSON-RPC error (-32700 parse error, -32600 invalid request), with
// its id when it could be read, and the session goes on; the SDK alone
// would end the session on it. Memory per line is bounded by
// MaxMessageBytes. When in ends, the requests read are answered before
// ServeStdio returns. Every answer carries the request's id exactly as the
// client wrote it (a big integer, 1.5, "\u0041" alike).
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	ids := &idTable{}
	w := &lineWriter{w: out, ids: ids}
	// The filter hands the SDK one checked line at a time, none longer
	// than MaxMessageBytes: the SDK's own limit is never reached.
	f := &frameFilter{ctx: ctx, r: bufio.NewReaderSize(in, 64<<10), w: w, ids: ids}
	return s.sdk.Run(ctx, &sdk.IOTransport{Reader: f, Writer: w, MaxLineLength: 2 * MaxMessageBytes})
}

// lineWriter writes whole lines only, one at a time, so the SDK's frames
// and the filter's error answers never interleave. In the SDK's frames it
// puts back the ids the filter replaced.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	ids *idTable
	buf []byte
}

// Write takes the SDK's output: each complete line is written with its
// request's id restored.
func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	rest := l.buf
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		line := restoreID(rest[:i], l.ids)
		if _, err := l.w.Write(append(line[:len(line):len(line)], '\n')); err != nil {
			return 0, err
		}
		rest = rest[i+1:]
	}
	l.buf = append(l.buf[:0], rest...)
	return len(p), nil
}

// answer writes one of the filter's own answer lines, as it is.
func (l *lineWriter) answer(line []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(line)
	return err
}

func (l *lineWriter) Close() error { return nil }

// frameFilter passes on the lines that admit lets through, rewritten, and
// answers the others itself.
type frameFilter struct {
	ctx     context.Context
	r       *bufio.Reader
	w       *lineWriter
	ids     *idTable
	pending []byte
}

func (f *frameFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		line, long, err := f.readLine()
		if long || len(bytes.TrimSpace(line)) > 0 {
			var pass, problem []byte
			if long {
				problem = rpcError(nil, codeInvalidRequest, tooLongMessage)
			} else {
				pass, problem = admit(line, f.ids)
			}
			if problem != nil {
				if werr := f.w.answer(problem); werr != nil {
					return 0, werr
				}
			} else {
				f.pending = append(pass, '\n')
			}
		}
		if err != nil && len(f.pending) == 0 {
			if errors.Is(err, io.EOF) {
				// The SDK drops the requests still running when its
				// input ends: the client's last requests are answered
				// first (the client then stops the process, MCP's
				// shutdown over stdio).
				f.ids.wait(f.ctx)
			}
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

// readLine returns the next line without its newline, or long when the
// line is longer than MaxMessageBytes: that line is skipped, so no more
// than MaxMessageBytes of a line is ever held.
func (f *frameFilter) readLine() (line []byte, long bool, err error) {
	for {
		chunk, err := f.r.ReadSlice('\n')
		if len(line)+len(bytes.TrimSuffix(chunk, []byte("\n"))) > MaxMessageBytes {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = f.r.ReadSlice('\n')
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				err = nil
			}
			return nil, true, err
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), false, err
	}
}
