package main

import (
	"errors"

	"github.com/reinhq/rein/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/cassette"
)

// cliAdvice says which flag fixes err, for the errors of the library whose
// messages name no flag (they are the same for every surface): "" when
// none does.
func cliAdvice(err error) string {
	var ie *engine.InputError
	switch {
	case errors.Is(err, engine.ErrSessionRequired):
		return "pass a session id with --session ID"
	case errors.As(err, &ie) && len(ie.Missing) > 0:
		return "pass the input with --input FILE (- for stdin) or --input-json JSON"
	case errors.Is(err, model.ErrNotConfigured):
		return "answer it with --model NAME|provider/model, or offline with --script FILE"
	case errors.Is(err, cassette.ErrRecordAgain):
		return "record it with --record FILE (and a model that answers: rein.yaml models:, or --model)"
	}
	return ""
}
