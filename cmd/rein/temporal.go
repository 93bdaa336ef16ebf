package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// A command line with --temporal HOSTPORT (rein worker, rein run, rein
// agent, rein runs show|list|cancel|approve|reject|settle|submit|retry|effects|trace)
// runs on a Temporal server. Its program is
// rein-temporal (module github.com/reinhq/rein/temporal, which links the
// Temporal SDK): rein hands it the command line unchanged, so that rein
// itself stays light (docs/ARCHITECTURE.md "Temporal").

// temporalProgram is the program's name; REIN_TEMPORAL names another path.
const temporalProgram = "rein-temporal"

// wantsTemporal reports whether args ask for Temporal (--temporal, before
// a "--").
func wantsTemporal(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--temporal" || strings.HasPrefix(a, "--temporal=") {
			return true
		}
	}
	return false
}

// findTemporal is the rein-temporal program: REIN_TEMPORAL, else the one
// beside this rein, else the first on PATH.
func findTemporal() (string, error) {
	if p := os.Getenv("REIN_TEMPORAL"); p != "" {
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), temporalProgram)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath(temporalProgram)
	if err != nil {
		return "", fmt.Errorf("--temporal is carried out by the %s program, which was not found beside rein or on PATH: install it (go install github.com/reinhq/rein/temporal/cmd/rein-temporal@latest; from a clone of rein: cd temporal && go install ./cmd/rein-temporal) or name it in REIN_TEMPORAL", temporalProgram)
	}
	return p, nil
}

// runTemporal runs args with rein-temporal and exits as it does. When the
// streams are this process's own (the rein program, not a test), rein
// becomes rein-temporal (execTemporal): the pid a user holds is the
// worker's. Otherwise, or where that is not possible, rein-temporal is
// its child.
func runTemporal(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	prog, err := findTemporal()
	if err != nil {
		fmt.Fprintln(stderr, "rein:", err)
		return exitUsage
	}
	if stdin == io.Reader(os.Stdin) && stdout == io.Writer(os.Stdout) && stderr == io.Writer(os.Stderr) {
		err := execTemporal(prog, args)
		if !errors.Is(err, errors.ErrUnsupported) {
			fmt.Fprintf(stderr, "rein: %s: %v\n", prog, err)
			return exitUsage
		}
	}
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	case errors.As(err, &ee):
		return exitInterrupted // killed by a signal
	}
	fmt.Fprintf(stderr, "rein: %s: %v\n", prog, err)
	return exitUsage
}
