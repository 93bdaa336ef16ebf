package httperr

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// MaxStreamBytes bounds the body of one streamed reply (every event and
// byte of it): a server that streams more is cut off with ErrStreamTooLong.
const MaxStreamBytes = 32 << 20

// ErrStreamTooLong is the error reading a streamed reply past
// MaxStreamBytes.
var ErrStreamTooLong = fmt.Errorf("the streamed reply passed %d MiB; rein stopped reading it", MaxStreamBytes>>20)

// LimitStream is a request middleware (both SDKs' option.Middleware) that
// bounds the body of a successful answer to MaxStreamBytes.
func LimitStream(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	resp, err := next(req)
	if err == nil && resp != nil && resp.Body != nil && resp.StatusCode < 300 {
		resp.Body = &limited{rc: resp.Body, left: MaxStreamBytes}
	}
	return resp, err
}

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
