package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// TestMain runs the server when this test binary is the load test's
// server child (startServer runs os.Executable with -serve).
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		if err := run(os.Args[1:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A short load keeps the generator working: a server child on SQLite, two
// clients for a second, every route class exercised, no error, and the
// report's figures.
func TestLoadSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	var out bytes.Buffer
	if err := run([]string{"-clients", "2", "-duration", "1s", "-sse-every", "1"}, &out); err != nil {
		t.Fatalf("load: %v\n%s", err, out.String())
	}
	report := out.String()
	m := regexp.MustCompile(`W5 runs started and finished: (\d+)`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("no W5 count in the report:\n%s", report)
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 {
		t.Errorf("no W5 run finished:\n%s", report)
	}
	for _, class := range classes {
		row := regexp.MustCompile(`\| ` + regexp.QuoteMeta(class) + ` \| (\d+) \|.*\| (\d+) \|`).FindStringSubmatch(report)
		if row == nil || row[1] == "0" || row[2] != "0" {
			t.Errorf("route class %s: %v in the report:\n%s", class, row, report)
		}
	}
	if !regexp.MustCompile(`server goroutines \d+ → \d+`).MatchString(report) {
		t.Errorf("no server gauges in the report:\n%s", report)
	}
}
