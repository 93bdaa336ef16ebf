package jsonl

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/reinhq/rein/trace"
)

// appendEvent appends e as one JSON object followed by '\n'. It does not
// allocate when dst has room.
func appendEvent(dst []byte, e *trace.Event) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = append(dst, `,"time":"`...)
	dst = e.Time.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","kind":`...)
	dst = appendString(dst, string(e.Kind))
	dst = append(dst, `,"run_id":`...)
	dst = appendString(dst, e.RunID)
	dst = appendStringField(dst, `,"flow":`, e.Flow)
	dst = appendStringField(dst, `,"step_id":`, e.StepID)
	dst = appendStringField(dst, `,"step_type":`, e.StepType)
	dst = appendIntField(dst, `,"attempt":`, int64(e.Attempt))
	dst = appendStringField(dst, `,"status":`, e.Status)
	dst = appendIntField(dst, `,"duration_ms":`, e.DurationMS)
	dst = appendStringField(dst, `,"model":`, e.Model)
	dst = appendStringField(dst, `,"tool":`, e.Tool)
	dst = appendIntField(dst, `,"tokens_in":`, int64(e.TokensIn))
	dst = appendIntField(dst, `,"tokens_out":`, int64(e.TokensOut))
	dst = appendStringField(dst, `,"error_class":`, e.ErrorClass)
	dst = appendStringField(dst, `,"error":`, e.Error)
	dst = appendStringField(dst, `,"origin":`, string(e.Origin))
	dst = appendStringField(dst, `,"budget":`, e.Budget)
	dst = appendStringField(dst, `,"decision":`, e.Decision)
	dst = appendStringField(dst, `,"input_sha256":`, e.InputSHA)
	dst = appendStringField(dst, `,"output_sha256":`, e.OutputSHA)
	dst = appendStringField(dst, `,"preview":`, e.Preview)
	return append(dst, '}', '\n')
}

func appendStringField(dst []byte, key, v string) []byte {
	if v == "" {
		return dst
	}
	return appendString(append(dst, key...), v)
}

func appendIntField(dst []byte, key string, v int64) []byte {
	if v == 0 {
		return dst
	}
	return strconv.AppendInt(append(dst, key...), v, 10)
}

const hex = "0123456789abcdef"

// safe reports the ASCII bytes that appear unescaped inside a JSON string.
var safe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// appendString appends s as a quoted JSON string, escaping it the way
// encoding/json does with SetEscapeHTML(false).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
