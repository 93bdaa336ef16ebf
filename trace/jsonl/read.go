package jsonl

import (
	"bufio"
	"bytes"

	"errors"
	"fmt"
	"io"
	"os"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/trace"
)

// MaxLineBytes is the longest line Read accepts.
const MaxLineBytes = 1 << 20

// LineError reports a line of a trace that could not be read.
type LineError struct {
	Path string // file name; empty when reading from an io.Reader
	Line int    // 1-based line number
	Err  error
}

// Error returns "path:line: message", or "line N: message" without a path.
func (e *LineError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
}

// Unwrap returns the underlying error.
func (e *LineError) Unwrap() error { return e.Err }

// Read decodes a JSONL trace. Blank lines are ignored and unknown fields are
// ignored; a line that is not one JSON object decoding into a trace.Event, or
// that is longer than MaxLineBytes, is a *LineError naming its line number;
// the events before that line are returned with it, so a trace cut short by a
// crash can still be summarised.
func Read(r io.Reader) ([]trace.Event, error) {
	return read(r, "")
}

// ReadFile decodes the JSONL trace in the file at path, as Read does; line
// errors name the path.
func ReadFile(path string) ([]trace.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	defer f.Close()
	return read(f, path)
}

func read(r io.Reader, path string) ([]trace.Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	var events []trace.Event
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if b[0] != '{' {
			return events, &LineError{Path: path, Line: line, Err: errors.New("not a JSON object")}
		}
		var e trace.Event
		if err := journal.DecodeEvent(b, &e); err != nil {
			return events, &LineError{Path: path, Line: line, Err: err}
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("line longer than %d bytes", MaxLineBytes)
		}
		return events, &LineError{Path: path, Line: line + 1, Err: err}
	}
	return events, nil
}
