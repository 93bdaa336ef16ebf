package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/cassette"
	"github.com/reinhq/rein/store"
)

// cliAdvice says which flag fixes err, for the errors of the library whose
// messages name no flag (they are the same for every surface): "" when
// none does.
func cliAdvice(err error) string {
	var ie *rein.InputError
	switch {
	case errors.Is(err, rein.ErrSessionRequired):
		return "pass a session id with --session ID"
	case errors.As(err, &ie) && len(ie.Missing) > 0:
		return "pass the input with --input FILE (- for stdin) or --input-json JSON"
	case errors.Is(err, model.ErrNotConfigured):
		return "answer it with --model NAME|provider/model, or offline with --script FILE"
	case errors.Is(err, cassette.ErrRecordAgain):
		return "record it with --record FILE (and a model that answers: rein.yaml models:, or --model)"
	case errors.Is(err, store.ErrDamaged) && !strings.Contains(err.Error(), "rein runs check"):
		return "rein runs check, with the same --db, lists what is wrong; restore the store from a backup"
	}
	return ""
}

// diagAdvice is the CLI's advice for the diagnostics of a flow that carry
// a code, once per code.
var diagAdvice = map[string]string{
	flow.CodeModelNotConfigured: "answer unconfigured models with --model NAME|provider/model, or offline with --script FILE",
	flow.CodeUntrustedTools:     "--trusted-tools-only refuses the tools a flow declares itself: run it without the flag to allow them",
}

// writeDiagnostics prints ds, one per line, then the CLI's advice for them.
func writeDiagnostics(w io.Writer, ds []flow.Diagnostic) {
	var codes []string
	for _, d := range ds {
		fmt.Fprintln(w, d.String())
		if diagAdvice[d.Code] != "" && !slices.Contains(codes, d.Code) {
			codes = append(codes, d.Code)
		}
	}
	for _, c := range codes {
		fmt.Fprintln(w, "rein:", diagAdvice[c])
	}
}
