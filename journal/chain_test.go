package journal_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/redact"
)

// A failed attempt's cause chain: each wrapping link says what it adds,
// a class and a detail ride on their links, a join's errors sit one level
// down, and a secret is hidden before anything is cut.
func TestChain(t *testing.T) {
	t.Parallel()
	const secret = "sk-chain-secret-0123456789"
	red := redact.New(secret)
	stderr := "connecting to db\nauth failed with " + secret + "\n"
	leaf := fault.WithDetail(fault.Errorf(fault.Business, "tool fetch: failed with exit code 3; stderr: %s", stderr), fault.DetailStderr, stderr)
	joined := errors.Join(errors.New("first cleanup failed"), fmt.Errorf("second: %w", errors.New("disk full")))
	err := fmt.Errorf("step fetch: %w", errors.Join(leaf, joined))

	got := journal.Chain(err, red)
	var lines []string
	for _, c := range got {
		lines = append(lines, fmt.Sprintf("%d %s [%s] %q %s %q", c.Depth, c.Type, c.Class, c.Message, c.DetailKind, c.Detail))
	}
	want := []string{
		`0 *fmt.wrapError [] "step fetch"  ""`,
		`1 *errors.joinError [] "tool fetch: failed with exit code 3; stderr: connecting to db\nauth failed with [REDACTED]\n\nfirst cleanup failed\nsecond: disk full"  ""`,
		`2 *fault.detailed [] "" stderr "connecting to db\nauth failed with [REDACTED]\n"`,
		`3 *fault.Error [business] ""  ""`,
		`4 *errors.errorString [] "tool fetch: failed with exit code 3; stderr: (detail)"  ""`,
		`2 *errors.joinError [] "first cleanup failed\nsecond: disk full"  ""`,
		`3 *errors.errorString [] "first cleanup failed"  ""`,
		`3 *fmt.wrapError [] "second"  ""`,
		`4 *errors.errorString [] "disk full"  ""`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("chain:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if journal.Chain(nil, red) != nil {
		t.Error("a nil error has a chain")
	}
}

// The bounds hold: a deep chain stops at ChainDepth, a long message and a
// long stderr are cut (the stderr from its start, as its tail matters),
// and a last link says what was left out.
func TestChainBounds(t *testing.T) {
	t.Parallel()
	err := errors.New("root")
	for i := range 40 {
		err = fmt.Errorf("level %d: %w", i, err)
	}
	got := journal.Chain(err, nil)
	if n := len(got); n != journal.ChainDepth+1 {
		t.Fatalf("%d links, want %d and the cut link", n, journal.ChainDepth)
	}
	if last := got[len(got)-1]; last.Type != "cut" || !strings.HasPrefix(last.Message, "1 causes left out") {
		t.Errorf("last link %+v", last)
	}
	long := strings.Repeat("é", 3000) // 2 bytes a rune
	tail := strings.Repeat("x", 5000) + "THE END"
	got = journal.Chain(fault.WithDetail(errors.New(long), fault.DetailStderr, tail), nil)
	if len(got) != 2 {
		t.Fatalf("chain %+v", got)
	}
	if d := got[0].Detail; len(d) > journal.CauseBytes || !strings.HasPrefix(d, redact.Ellipsis) || !strings.HasSuffix(d, "THE END") {
		t.Errorf("the stderr tail is %d bytes: %.20q…%q", len(d), d, d[len(d)-10:])
	}
	if m := got[1].Message; len(m) > journal.CauseBytes || !strings.HasSuffix(m, redact.Ellipsis) || !strings.HasPrefix(m, "é") {
		t.Errorf("the message is %d bytes, ends %q", len(m), m[len(m)-8:])
	}
	// many wide links: the byte budget ends the chain before the link count
	var errs []error
	for range 12 {
		errs = append(errs, errors.New(strings.Repeat("y", 1000)))
	}
	got = journal.Chain(errors.Join(errs...), nil)
	size := 0
	for _, c := range got {
		size += len(c.Type) + len(c.Message) + len(c.Detail)
	}
	if size > journal.ChainBytes+200 || len(got) >= 13 || got[len(got)-1].Type != "cut" {
		t.Errorf("%d links of %d bytes, the last %q", len(got), size, got[len(got)-1].Type)
	}
}

// The chain rides in the attempt_failed event: AppendEvent writes it as
// encoding/json would, it reads back, and Redact hides a secret the
// recorder did not know.
func TestEventChainRedacted(t *testing.T) {
	t.Parallel()
	const secret = "late-known-secret-abcdef"
	e := journal.Event{Seq: 1, Kind: journal.AttemptFailed, RunID: "r", StepID: "s", Attempt: 1,
		Chain: journal.Chain(fault.WithDetail(errors.New("401 for "+secret), fault.DetailResponseBody, `{"error":{"message":"bad key `+secret+`"}}`), nil)}
	e.Redact(redact.New(secret))
	line := journal.AppendEvent(nil, &e)
	if strings.Contains(string(line), secret) {
		t.Fatalf("the event holds the secret: %s", line)
	}
	var back journal.Event
	if err := journal.DecodeEvent(line, &back); err != nil || len(back.Chain) != 2 || back.Chain[0].DetailKind != fault.DetailResponseBody {
		t.Fatalf("read back %+v, %v", back.Chain, err)
	}
}
