package exec

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reinhq/rein/fault"
)

// fragmentBytes is how much of bad stdout an error message quotes.
const fragmentBytes = 200

// cappedBuffer keeps up to max bytes; the write that would pass max calls
// overflow once and fails, which stops the copy.
type cappedBuffer struct {
	buf        bytes.Buffer
	max        int64
	overflow   func()
	overflowed bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if c.overflowed {
		return 0, errOverflow
	}
	if int64(c.buf.Len())+int64(len(p)) > c.max {
		c.overflowed = true
		c.overflow()
		return 0, errOverflow
	}
	return c.buf.Write(p)
}

// tailBuffer keeps the last keep bytes written to it.
type tailBuffer struct {
	buf     []byte
	keep    int
	dropped bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.keep {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.keep:]...)
		t.dropped = true
	}
	return len(p), nil
}

// String is the kept tail as trimmed, valid UTF-8, marked when cut.
func (t *tailBuffer) String() string {
	b, cut := t.buf, t.dropped
	if len(b) > t.keep {
		b, cut = b[len(b)-t.keep:], true
	}
	if cut {
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	if cut {
		s = "…" + s
	}
	return s
}

// decode reads exactly one JSON value from out.
func (t *Tool) decode(out []byte) (any, error) {
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, t.errorf(fault.Business, "printed nothing on stdout; it must print one JSON value")
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, t.errorf(fault.Business, "stdout is not JSON (%v): %s", err, fragment(out))
	}
	rest := out[dec.InputOffset():]
	if extra := bytes.TrimLeft(rest, " \t\r\n"); len(extra) > 0 {
		at := len(out) - len(extra)
		return nil, t.errorf(fault.Business, "stdout holds more than one JSON value (or text after one); the extra starts at byte %d: %s", at, fragment(extra))
	}
	return v, nil
}

// fragment quotes the start of b, cut to valid UTF-8.
func fragment(b []byte) string {
	cut := len(b) > fragmentBytes
	if cut {
		n := fragmentBytes
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		b = b[:n]
	}
	s := strconv.Quote(strings.ToValidUTF8(string(b), "\uFFFD"))
	if cut {
		s += "…"
	}
	return s
}
