package rein_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// heavyModules are the database drivers and provider SDKs a program links
// only by importing the adapter that needs them (store/sqlite,
// store/postgres, model/openai, model/anthropic,
// server/workflowtool/delivery/xlsx), each registering itself.
var heavyModules = []string{
	"modernc.org/sqlite",
	"github.com/jackc/pgx",
	"github.com/openai/openai-go",
	"github.com/anthropics/anthropic-sdk-go",
	"github.com/xuri/excelize",
	// the OpenTelemetry SDK and exporters: trace/otel and cmd/rein only
	"go.opentelemetry.io/otel/sdk",
	"go.opentelemetry.io/otel/exporters",
}

// linkNothingHeavy are the packages a library user imports to load and run
// flows, open a store, build models and serve workflow tools: none of them
// may pull in a driver or an SDK.
var linkNothingHeavy = []string{
	"github.com/reinhq/rein",
	"github.com/reinhq/rein/store",
	"github.com/reinhq/rein/model/provider",
	"github.com/reinhq/rein/server/workflowtool",
	"github.com/reinhq/rein/server/mcp",
	"github.com/reinhq/rein/server/http",
	"github.com/reinhq/rein/project",
	"github.com/reinhq/rein/runs",
	"github.com/reinhq/rein/session",
}

// TestRootLinksNoDriver: `go list` shows none of heavyModules among the
// dependencies of linkNothingHeavy (tests excluded). A failure names the
// package, the module and how to find the import that brings it in.
func TestRootLinksNoDriver(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH: cannot list the root package's dependencies")
	}
	args := append([]string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}, linkNothingHeavy...)
	out, err := exec.CommandContext(t.Context(), "go", args...).Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(linkNothingHeavy) {
		t.Fatalf("go list gave %d packages, want %d:\n%s", len(lines), len(linkNothingHeavy), out)
	}
	for _, line := range lines {
		fields := strings.Fields(line)
		pkg, deps := fields[0], fields[1:]
		for _, mod := range heavyModules {
			for _, d := range deps {
				if d == mod || strings.HasPrefix(d, mod+"/") {
					t.Errorf("%s links %s (package %s): import the adapter that needs it from the program (cmd/rein/drivers.go), not from a library package; `go mod why %s` shows the import path", pkg, mod, d, d)
					break
				}
			}
		}
	}
}
