package fault

import "errors"

// The kinds of detail an error of rein's adapters carries (Detailed).
const (
	// DetailStderr is the tail of what a tool's process wrote on stderr.
	DetailStderr = "stderr"
	// DetailResponseBody is the body of a provider's or a server's error
	// answer.
	DetailResponseBody = "response_body"
)

// Detailed is an error that carries more than its message says: the tail
// of a tool's stderr, the body of a provider's error answer. The trace
// records the detail beside the error's message in a failed attempt's
// cause chain (journal.Chain). Kind is one of the Detail* names (or
// another short word); text is already redacted by whoever made the
// error, and is redacted again when the trace records it.
type Detailed interface {
	error
	ErrorDetail() (kind, text string)
}

// WithDetail returns err carrying text as a detail of kind kind
// (Detailed); its message and class stay err's. A nil err stays nil, and
// an empty text returns err unchanged.
func WithDetail(err error, kind, text string) error {
	if err == nil || text == "" {
		return err
	}
	return &detailed{err: err, kind: kind, text: text}
}

// DetailOf returns the detail of the first Detailed error in err's chain,
// or empty strings.
func DetailOf(err error) (kind, text string) {
	var d Detailed
	if errors.As(err, &d) {
		return d.ErrorDetail()
	}
	return "", ""
}

type detailed struct {
	err        error
	kind, text string
}

func (d *detailed) Error() string                    { return d.err.Error() }
func (d *detailed) Unwrap() error                    { return d.err }
func (d *detailed) ErrorDetail() (kind, text string) { return d.kind, d.text }
