package mcp

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Bounds of one incoming JSON-RPC message (a stdio line, an HTTP body),
// checked by a scan that neither recurses nor allocates per value before
// the SDK decodes the message: one that exceeds them is answered with a
// JSON-RPC error and the session goes on.
const (
	// MaxMessageBytes bounds the size of one message.
	MaxMessageBytes = 4 << 20
	// MaxDepth bounds the nesting of objects and arrays in one message,
	// its own object counting 1: a tool's arguments ("params" →
	// "arguments") may nest MaxDepth-2 deep.
	MaxDepth = 64
	// MaxValues bounds the number of JSON values (objects, arrays,
	// strings, numbers, literals) in one message. Decoded, each costs
	// a few hundred bytes at most, so with MaxMessageBytes it bounds the
	// memory one message takes to decode and check (a message of 4 MiB of
	// empty objects decoded to over 500 MB).
	MaxValues = 1 << 17
)

// JSON-RPC error codes the server answers itself.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// frameError is why a message is refused: its JSON-RPC error code and
// message.
type frameError struct {
	code int
	msg  string
}

// member is one member of a message's top-level object: its key
// (unescaped) and the byte span b[start:end] of its value.
type member struct {
	key        string
	start, end int
}

// scanFrame checks that b is exactly one JSON value (surrounding
// whitespace allowed) whose objects and arrays nest at most maxDepth deep,
// and that holds at most maxValues values, and returns the members of the
// top level when it is an object, in
// order (nil for any other value). It accepts what json.Valid accepts
// within that depth, takes time linear in len(b), never recurses, and
// allocates only the members, a stack of maxDepth bytes at most and the
// top-level keys.
func scanFrame(b []byte, maxDepth, maxValues int) ([]member, *frameError) {
	s := frameScanner{b: b}
	values := 0
	var stack []byte // '{' or '[' per open container
	var top []member
	inTopObject := func() bool { return len(stack) == 1 && stack[0] == '{' }
	expectValue := true
	for {
		if expectValue {
			s.space()
			if inTopObject() && top[len(top)-1].start < 0 {
				top[len(top)-1].start = s.i
			}
			c, ok := s.peek()
			if !ok {
				return nil, s.fail("the message ends inside a value")
			}
			if values++; values > maxValues {
				return nil, &frameError{codeInvalidRequest, "Invalid Request: the message holds more than " + strconv.Itoa(maxValues) + " JSON values; send less per message"}
			}
			switch {
			case c == '{' || c == '[':
				if len(stack) >= maxDepth {
					return nil, &frameError{codeInvalidRequest, "Invalid Request: the message nests objects and arrays deeper than " + strconv.Itoa(maxDepth)}
				}
				stack = append(stack, c)
				s.i++
				s.space()
				if c2, _ := s.peek(); c2 == c+2 { // '{'+2 is '}', '['+2 is ']'
					s.i++
					stack = stack[:len(stack)-1]
					expectValue = false
					continue
				}
				if c == '{' {
					key, err := s.key(inTopObject())
					if err != nil {
						return nil, err
					}
					if inTopObject() {
						top = append(top, member{key: key, start: -1})
					}
				}
				continue
			case c == '"':
				if err := s.str(); err != nil {
					return nil, err
				}
			case c == '-' || (c >= '0' && c <= '9'):
				if err := s.number(); err != nil {
					return nil, err
				}
			case c == 't':
				if err := s.literal("true"); err != nil {
					return nil, err
				}
			case c == 'f':
				if err := s.literal("false"); err != nil {
					return nil, err
				}
			case c == 'n':
				if err := s.literal("null"); err != nil {
					return nil, err
				}
			default:
				return nil, s.fail("unexpected character")
			}
			expectValue = false
			continue
		}
		// A value ended at s.i.
		if len(stack) == 0 {
			s.space()
			if s.i != len(b) {
				return nil, s.fail("more follows the message's value")
			}
			return top, nil
		}
		if inTopObject() && top[len(top)-1].end == 0 {
			top[len(top)-1].end = s.i
		}
		s.space()
		c, ok := s.peek()
		if !ok {
			return nil, s.fail("the message ends inside an object or array")
		}
		open := stack[len(stack)-1]
		switch c {
		case ',':
			s.i++
			if open == '{' {
				key, err := s.key(inTopObject())
				if err != nil {
					return nil, err
				}
				if inTopObject() {
					top = append(top, member{key: key, start: -1})
				}
			}
			expectValue = true
		case open + 2:
			s.i++
			stack = stack[:len(stack)-1]
		default:
			return nil, s.fail("expected , or a closing bracket")
		}
	}
}

// frameScanner reads b from i.
type frameScanner struct {
	b []byte
	i int
}

func (s *frameScanner) peek() (byte, bool) {
	if s.i >= len(s.b) {
		return 0, false
	}
	return s.b[s.i], true
}

func (s *frameScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *frameScanner) fail(what string) *frameError {
	return &frameError{codeParseError, "Parse error: the message is not JSON: " + what + " at byte " + strconv.Itoa(s.i)}
}

// key reads an object's key and the colon after it; it returns the key
// unescaped when want is set.
func (s *frameScanner) key(want bool) (string, *frameError) {
	s.space()
	if c, _ := s.peek(); c != '"' {
		return "", s.fail("expected an object key")
	}
	start := s.i
	if err := s.str(); err != nil {
		return "", err
	}
	raw := s.b[start:s.i]
	s.space()
	if c, _ := s.peek(); c != ':' {
		return "", s.fail("expected : after an object key")
	}
	s.i++
	if !want {
		return "", nil
	}
	if isPlainASCII(raw) {
		return string(raw[1 : len(raw)-1]), nil
	}
	var k string
	if json.Unmarshal(raw, &k) != nil { // checked by str: cannot happen
		return "", s.fail("bad object key")
	}
	return k, nil
}

// str reads a string from its opening quote.
func (s *frameScanner) str() *frameError {
	s.i++
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return nil
		case c < 0x20:
			return s.fail("a control character in a string")
		case c == '\\':
			s.i++
			e, ok := s.peek()
			if !ok {
				return s.fail("the message ends inside a string")
			}
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				s.i++
				for range 4 {
					h, ok := s.peek()
					if !ok || !isHex(h) {
						return s.fail(`a bad \u escape`)
					}
					s.i++
				}
			default:
				return s.fail("a bad escape")
			}
		default:
			s.i++
		}
	}
	return s.fail("the message ends inside a string")
}

// isPlainASCII reports whether the string literal raw holds no escape and
// no byte past ASCII: its text is then the bytes between its quotes (else
// JSON decoding unescapes it and replaces invalid UTF-8).
func isPlainASCII(raw []byte) bool {
	for _, c := range raw {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *frameScanner) number() *frameError {
	if s.b[s.i] == '-' {
		s.i++
	}
	c, ok := s.peek()
	switch {
	case !ok:
		return s.fail("a bad number")
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return s.fail("a bad number")
	}
	if c, _ := s.peek(); c == '.' {
		s.i++
		if s.digits() == 0 {
			return s.fail("a bad number")
		}
	}
	if c, _ := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c, _ := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if s.digits() == 0 {
			return s.fail("a bad number")
		}
	}
	return nil
}

func (s *frameScanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

func (s *frameScanner) literal(word string) *frameError {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return s.fail("unexpected character")
	}
	s.i += len(word)
	return nil
}
