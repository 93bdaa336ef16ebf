package cassette

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/redact"
)

// Recorder is a model.Model that forwards every call to another model and
// records the exchange; Close writes the cassette. It is safe for
// concurrent use; exchanges are kept in the order the calls return.
type Recorder struct {
	next model.Model
	path string

	mu        sync.Mutex
	redactor  *redact.Redactor
	exchanges []Exchange
	closed    bool
	closeErr  error
}

var _ model.Model = (*Recorder)(nil)

// Record returns a Recorder forwarding to m that will write the cassette at
// path when closed, replacing any file there. It fails when m is nil or
// path's directory does not exist. The secrets to redact are taken from the
// environment now (see the package documentation); add others with Redact.
func Record(m model.Model, path string) (*Recorder, error) {
	if m == nil {
		return nil, errors.New("record cassette: nil model")
	}
	if path == "" {
		return nil, errors.New("record cassette: empty path")
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("record cassette %s: %w", path, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("record cassette %s: %s is not a directory", path, dir)
	}
	return &Recorder{next: m, path: path, redactor: redact.Process()}, nil
}

// UseRedactor replaces the recorder's redactor (by default
// redact.Process(), the process environment's secrets) with red, which
// may know more (a project's rein.yaml secrets:). Values given to Redact
// before are dropped. Call it before the calls whose exchanges could
// hold secrets.
func (r *Recorder) UseRedactor(red *redact.Redactor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.redactor = red
}

// Redact adds values that must never be written to the cassette, such as
// the API key a provider was configured with when its variable's name does
// not say KEY or TOKEN. Empty values are ignored. Call it before the calls
// whose exchanges could hold them.
func (r *Recorder) Redact(values ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.redactor = r.redactor.With(values...)
}

// Generate forwards req to the wrapped model and records the exchange,
// returning the model's response and error unchanged. A call that ends
// because ctx ended is not recorded: it says nothing about the model.
// After Close it fails with a business error without calling the model.
func (r *Recorder) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if req == nil {
		return nil, fault.Errorf(fault.Business, "cassette recorder: nil request")
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, fault.Errorf(fault.Business, "cassette recorder for %s is closed", r.path)
	}
	// Snapshot the request: the caller may reuse it once Generate returns,
	// and the model might (wrongly) touch it.
	key := Key(req)
	rec := Request{
		Model:      req.Model,
		Decision:   req.Decision,
		Step:       req.StepID,
		Corrective: req.Corrective,
		Messages:   recordedMessages(req.Messages),
		Schema:     recordedSchema(req.Schema),
	}
	if len(req.Tools) > 0 {
		rec.Tools = make([]model.ToolDef, len(req.Tools))
		for i, t := range req.Tools {
			t.Schema = recordedSchema(t.Schema)
			rec.Tools[i] = t
		}
	}
	if c := req.ToolChoice; !c.IsZero() {
		rec.ToolChoice = &c
	}
	resp, err := r.next.Generate(ctx, req)
	if err != nil && ctx.Err() != nil {
		return resp, err
	}
	x := Exchange{Key: key, Request: rec}
	if resp != nil {
		x.Response = &Response{Text: resp.Text, ToolCalls: slices.Clone(resp.ToolCalls), Usage: resp.Usage, Model: resp.Model}
	}
	if err != nil {
		x.Error = &Error{Class: fault.ClassOf(err), Message: err.Error()}
	} else if resp == nil {
		x.Response = &Response{}
	}
	r.mu.Lock()
	red := r.redactor // immutable: Redact replaces it
	r.mu.Unlock()
	redactExchange(red, &x)
	r.mu.Lock()
	if !r.closed {
		r.exchanges = append(r.exchanges, x)
	}
	r.mu.Unlock()
	return resp, err
}

// recordedMessages copies messages, their tool calls included.
func recordedMessages(msgs []model.Message) []model.Message {
	out := slices.Clone(msgs)
	for i := range out {
		out[i].ToolCalls = slices.Clone(out[i].ToolCalls)
	}
	return out
}

// recordedSchema is the schema as it can be written: valid JSON as is,
// anything else as a JSON string of its text (Key treats both alike).
func recordedSchema(s json.RawMessage) json.RawMessage {
	if len(s) == 0 {
		return nil
	}
	if json.Valid(s) {
		return slices.Clone(s)
	}
	b, _ := json.Marshal(string(s))
	return b
}

// Len returns the number of exchanges recorded so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.exchanges)
}

// Close writes the cassette: to a temporary file beside path, then renamed
// over it, so a reader never sees half a cassette and a failed write leaves
// the old one in place. Calls after the first return its result.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.closeErr
	}
	r.closed = true
	c := &Cassette{Version: Version, Exchanges: r.exchanges}
	if c.Exchanges == nil {
		c.Exchanges = []Exchange{}
	}
	r.closeErr = writeFile(r.path, c)
	return r.closeErr
}

// writeFile writes c to path atomically.
func writeFile(path string, c *Cassette) (err error) {
	data, err := encode(c)
	if err != nil {
		return fmt.Errorf("write cassette %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write cassette %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
			err = fmt.Errorf("write cassette %s: %w", path, err)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(0o644); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
