package httperr

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// MaxStreamBytes bounds the body of one streamed reply (every event and
// byte of it): a server that streams more is cut off with ErrStreamTooLong.
const MaxStreamBytes = 32 << 20

// ErrStreamTooLong is the error reading a streamed reply past
// MaxStreamBytes.
var ErrStreamTooLong = fmt.Errorf("the streamed reply passed %d MiB; rein stopped reading it", MaxStreamBytes>>20)

// StreamBody is a request middleware (Middleware, for both SDKs'
// option.WithMiddleware) for a streamed call's answer: it bounds an event
// stream to MaxStreamBytes, and keeps aside, in JSON, the whole reply of
// a server that ignored stream: true and answered application/json (the
// stream then reads as empty, and the caller decodes JSON instead).
type StreamBody struct {
	// JSON is the body of a 2xx application/json answer, when there was one.
	JSON []byte
}

// Middleware sends req and wraps the answer's body.
func (b *StreamBody) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	resp, err := next(req)
	if err != nil || resp == nil || resp.Body == nil || resp.StatusCode >= 300 {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		data, rerr := io.ReadAll(&limited{rc: resp.Body, left: MaxStreamBytes})
		_ = resp.Body.Close()
		if rerr != nil {
			resp.Body = io.NopCloser(&failing{err: rerr})
			return resp, nil
		}
		b.JSON = data
		resp.Body = io.NopCloser(strings.NewReader(""))
		return resp, nil
	}
	resp.Body = &limited{rc: resp.Body, left: MaxStreamBytes}
	return resp, nil
}

// failing is a body whose every read fails with err.
type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }

type limited struct {
	rc   io.ReadCloser
	left int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// one byte more than allowed tells a body at the limit from one past it
		var one [1]byte
		if n, _ := l.rc.Read(one[:]); n > 0 {
			return 0, ErrStreamTooLong
		}
		return l.rc.Read(p)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.rc.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limited) Close() error { return l.rc.Close() }

// IsStreamTooLong reports whether err is, or wraps, ErrStreamTooLong.
func IsStreamTooLong(err error) bool { return errors.Is(err, ErrStreamTooLong) }
