package model

import "context"

// DeltaFunc receives the text of a reply while the model writes it, one
// piece at a time, in order. It is called on the goroutine that makes the
// call, so it must return quickly; it must not keep a reference beyond
// the string it is given.
//
// Deltas are a view, not a record: the Response a call returns is the
// whole reply, the same whether or not it was streamed, and only that is
// journaled. A call that fails after some deltas may be asked again; the
// deltas of each try are delivered as the model writes them.
type DeltaFunc func(text string)

type deltasKey struct{}

// WithDeltas returns ctx carrying fn: a Model's Generate under it sends
// the text of its reply to fn as it arrives (the provider adapters stream;
// the scripted model and cassettes send the whole text as one delta). A
// nil fn removes the one ctx carries.
func WithDeltas(ctx context.Context, fn DeltaFunc) context.Context {
	return context.WithValue(ctx, deltasKey{}, fn)
}

// DeltasOf returns the DeltaFunc ctx carries for req, or nil: none is
// carried, or req asks for a structured answer (Schema set: its text is
// data, not prose, and is not streamed).
func DeltasOf(ctx context.Context, req *Request) DeltaFunc {
	if req != nil && len(req.Schema) > 0 {
		return nil
	}
	fn, _ := ctx.Value(deltasKey{}).(DeltaFunc)
	return fn
}

// SendText hands a whole reply's text to the DeltaFunc of ctx as one
// delta, for a Model that does not stream (scripted, replayed): callers
// then see the same deltas offline as online. Empty text sends nothing.
func SendText(ctx context.Context, req *Request, text string) {
	if text == "" {
		return
	}
	if fn := DeltasOf(ctx, req); fn != nil {
		fn(text)
	}
}
