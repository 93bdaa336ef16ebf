package jsonl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/reinhq/rein/trace"
)

// ErrClosed is recorded by Emit, Flush and Close when the sink was already closed
// and no earlier error had been recorded.
var ErrClosed = errors.New("jsonl: sink is closed")

const (
	bufferSize = 32 << 10 // bufio.Writer size
	keepBuffer = 64 << 10 // larger encode buffers are dropped after use
)

// Sink is a [trace.Sink] that writes each event as one JSON line. It is safe
// for concurrent use: several runs may share one Sink. Output is buffered;
// call Close or Flush when done. The first write error is remembered, later
// events are dropped, and Err, Flush and Close report that error.
type Sink struct {
	mu     sync.Mutex
	w      *bufio.Writer
	file   *os.File // set by Create; closed by Close
	buf    []byte   // reused encode buffer
	err    error
	closed bool
}

var _ trace.Borrower = (*Sink)(nil)

// BorrowsEvents marks the sink as a [trace.Borrower]: Emit keeps nothing of
// the event once it returns.
func (*Sink) BorrowsEvents() {}

// New returns a Sink writing to w. Close flushes but does not close w: the
// caller owns it.
func New(w io.Writer) *Sink {
	return &Sink{w: bufio.NewWriterSize(w, bufferSize), buf: make([]byte, 0, 1024)}
}

// Create creates or truncates the file at path and returns a Sink writing to
// it; Close flushes and closes the file.
func Create(path string) (*Sink, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create trace file: %w", err)
	}
	s := New(f)
	s.file = f
	return s, nil
}

// Emit writes e as one line. It never blocks on ctx and does not retain e.
// After a write error or Close, events are dropped (see Err). A run_settled
// event flushes the buffer. Emit does not allocate in steady state.
func (s *Sink) Emit(_ context.Context, e *trace.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.setErr(ErrClosed)
		return
	}
	if s.err != nil {
		return
	}
	s.buf = appendEvent(s.buf[:0], e)
	if _, err := s.w.Write(s.buf); err != nil {
		s.setErr(err)
	}
	if cap(s.buf) > keepBuffer {
		s.buf = make([]byte, 0, 1024)
	}
	if e.Kind == trace.RunSettled && s.err == nil {
		s.setErr(s.w.Flush())
	}
}

// Err returns the first error the sink met, or nil.
func (s *Sink) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Flush writes buffered events to the underlying writer and returns the
// first error the sink met, or nil.
func (s *Sink) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.setErr(ErrClosed)
	} else if s.err == nil {
		s.setErr(s.w.Flush())
	}
	return s.err
}

// Close flushes buffered events, closes the file if the Sink came from
// Create, and returns the first error the sink met, or nil. Calling Close
// again returns the same result.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.err
	}
	s.closed = true
	if s.err == nil {
		s.setErr(s.w.Flush())
	}
	if s.file != nil {
		if err := s.file.Close(); err != nil {
			s.setErr(fmt.Errorf("close trace file: %w", err))
		}
	}
	return s.err
}

// setErr records err if it is the first one. s.mu must be held.
func (s *Sink) setErr(err error) {
	if s.err == nil && err != nil {
		s.err = err
	}
}
