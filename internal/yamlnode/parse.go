package yamlnode

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// The bounds Parse enforces before the YAML parser builds a tree. The lexer
// is linear in the input; go-yaml's parser is not (its time grows with the
// square of the nesting depth, of the number of documents and of the
// entries of one block mapping), so these are checked on the tokens first.
const (
	// MaxDepth bounds how deeply collections nest (block and flow style
	// together). Rein's own formats need fewer than 20 levels; values in
	// flows are further limited to 64.
	MaxDepth = 128
	// MaxDocuments bounds the "---"-separated documents of one file. Every
	// rein file holds one document; a few more are parsed so that the
	// reader can point at the second one.
	MaxDocuments = 16
	// MaxMappingEntries bounds the entries of one block mapping.
	MaxMappingEntries = 10000
)

// bom is the UTF-8 byte order mark some editors write at the start of a file.
var bom = []byte{0xEF, 0xBB, 0xBF}

// TrimBOM returns data without a leading UTF-8 byte order mark.
func TrimBOM(data []byte) []byte {
	return bytes.TrimPrefix(data, bom)
}

// ReadFile reads the file at path, refusing a folder and a file of
// more than limit bytes (checked before and while reading, so a file that
// grows meanwhile is refused too). The error names the file and the limit.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a folder (pass the folder to rein run, or the file inside it)", path)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d it may have", path, st.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is more than the %d bytes it may have", path, limit)
	}
	return data, nil
}

// Limits are the bounds of one Parse call. The zero value means the
// package's defaults and no size limit.
type Limits struct {
	// What names the file in messages: "a flow file", "rein.yaml", ….
	What string
	// MaxBytes bounds the input's size (after a BOM); 0 means no bound.
	MaxBytes int
	// NoAnchors rejects anchors (&name) and aliases (*name): aliases
	// expand into copies, so a few lines can stand for gigabytes.
	NoAnchors bool
}

// LimitError is a bound Parse found exceeded, or text that is not UTF-8,
// at a 1-based position.
type LimitError struct {
	Line, Col int
	Message   string
}

func (e *LimitError) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Message) }

// Parse parses YAML text after checking it against lim: a leading UTF-8
// BOM is dropped; text that is too large, is not UTF-8 or holds a NUL
// byte, nests deeper than MaxDepth, holds more than MaxDocuments documents
// or a block mapping of more than MaxMappingEntries entries is rejected
// with a *LimitError before any tree is built. Other errors are go-yaml's
// (*yaml.SyntaxError and friends).
func Parse(data []byte, lim Limits) (*ast.File, error) {
	data = TrimBOM(data)
	what := lim.What
	if what == "" {
		what = "the file"
	}
	if lim.MaxBytes > 0 && len(data) > lim.MaxBytes {
		return nil, &LimitError{1, 1, fmt.Sprintf("%s is %d bytes, more than the %d it may have", what, len(data), lim.MaxBytes)}
	}
	if err := checkText(data, what); err != nil {
		return nil, err
	}
	tokens := lexer.Tokenize(string(data))
	if err := checkTokens(tokens, what, lim); err != nil {
		return nil, err
	}
	return parser.Parse(tokens, 0)
}

// checkText rejects invalid UTF-8 and NUL bytes, at their position.
func checkText(data []byte, what string) error {
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return &LimitError{line, col, fmt.Sprintf("%s is not valid UTF-8 here (byte 0x%02x): save it as UTF-8", what, data[i])}
		case r == 0:
			return &LimitError{line, col, fmt.Sprintf("%s holds a NUL byte here: remove it", what)}
		case r == '\n':
			line, col = line+1, 0
		}
		i += size
		col++
	}
	return nil
}

// level is one open block collection: the column its entries start at and
// how many mapping entries it has had.
type level struct {
	col, entries int
}

// checkTokens measures nesting, documents and block mapping entries on the
// token stream. Block nesting is told by indentation: a token that starts a
// line, or follows "- " on its line, opens a deeper level when it stands
// right of the innermost open one and closes the levels it stands left of.
// That over-counts only in odd layouts, far below the limits' reach.
func checkTokens(tokens token.Tokens, what string, lim Limits) error {
	var (
		stack     []level
		flow      int
		docs      = 1
		seenBody  bool
		prevLine  int
		prevEntry bool
	)
	at := func(tk *token.Token, format string, args ...any) error {
		line, col := TokenPos(tk)
		return &LimitError{line, col, fmt.Sprintf(format, args...)}
	}
	for i, tk := range tokens {
		if tk.Type == token.CommentType {
			continue
		}
		if lim.NoAnchors && (tk.Type == token.AnchorType || tk.Type == token.AliasType) {
			return at(tk, "YAML anchors (&name) and aliases (*name) are not supported in %s: write the value out", what)
		}
		line, col := TokenPos(tk)
		switch tk.Type {
		case token.DocumentHeaderType:
			if seenBody {
				docs++
				seenBody = false
				if docs > MaxDocuments {
					return at(tk, "%s holds more than %d YAML documents; it should hold one", what, MaxDocuments)
				}
			}
			stack, flow = stack[:0], 0
			prevLine, prevEntry = line, false
			continue
		case token.DocumentEndType, token.DirectiveType:
			continue
		}
		seenBody = true
		opens := flow == 0 && (line != prevLine || prevEntry)
		prevLine, prevEntry = line, tk.Type == token.SequenceEntryType
		if opens {
			for len(stack) > 0 && stack[len(stack)-1].col > col {
				stack = stack[:len(stack)-1]
			}
			if len(stack) == 0 || stack[len(stack)-1].col < col {
				stack = append(stack, level{col: col})
			}
			if i+1 < len(tokens) && tokens[i+1].Type == token.MappingValueType {
				top := &stack[len(stack)-1]
				if top.entries++; top.entries > MaxMappingEntries {
					return at(tk, "this mapping in %s has more than %d entries", what, MaxMappingEntries)
				}
			}
		}
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			if flow > 0 {
				flow--
			}
		}
		if len(stack)+flow > MaxDepth {
			return at(tk, "%s nests more than %d levels deep here", what, MaxDepth)
		}
	}
	return nil
}
