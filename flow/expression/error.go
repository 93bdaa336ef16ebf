package expression

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr/file"
)

// Error is a compile-time or run-time expression error. Offset is a byte
// offset into the original source (as given to Compile); the flow loader
// turns it into file:line:col.
type Error struct {
	Offset int
	Msg    string
	src    string
}

// Error returns Msg followed, when the source is known, by the source line
// and a caret under Offset.
func (e *Error) Error() string {
	if e.src == "" {
		return e.Msg
	}
	start := strings.LastIndexByte(e.src[:e.Offset], '\n') + 1
	end := strings.IndexByte(e.src[e.Offset:], '\n')
	if end < 0 {
		end = len(e.src)
	} else {
		end += e.Offset
	}
	col := utf8.RuneCountInString(e.src[start:e.Offset])
	return fmt.Sprintf("%s\n | %s\n | %s^", e.Msg, e.src[start:end], strings.Repeat(".", col))
}

func newError(src string, offset int, format string, args ...any) *Error {
	return &Error{Offset: clamp(offset, len(src)), Msg: fmt.Sprintf(format, args...), src: src}
}

func clamp(off, n int) int {
	return max(0, min(off, n))
}

// runeToByte converts expr's rune offset into a byte offset of src.
func runeToByte(src string, runes int) int {
	if runes <= 0 {
		return 0
	}
	n := 0
	for i := range src {
		if n == runes {
			return i
		}
		n++
	}
	return len(src)
}

// fromExpr converts an error from expr into an *Error against the original
// source. The rewritten source has the same bytes at the same offsets, so
// only the rune-to-byte conversion is needed.
func fromExpr(src string, err error) *Error {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return newError(src, 0, "%v", err)
	}
	return newError(src, runeToByte(src, fe.From), "%s", friendly(fe.Message))
}

// friendly rewords the expr messages users hit most often.
func friendly(msg string) string {
	if rest, ok := strings.CutPrefix(msg, "cannot fetch "); ok {
		if field, ok := strings.CutSuffix(rest, " from <nil>"); ok {
			return fmt.Sprintf("cannot read field %q of nil; use ?. (x?.%s) to allow nil", field, field)
		}
	}
	return msg
}
