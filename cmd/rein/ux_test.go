package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, stderr := cli(t, "version")
	if code != exitOK || !strings.HasPrefix(out, "rein "+readBuildInfo().short()+"\n") || !strings.Contains(out, "go ") {
		t.Fatalf("version: exit %d %q %s", code, out, stderr)
	}
	code, flagOut, _ := cli(t, "--version")
	if code != exitOK || flagOut != "rein "+readBuildInfo().short()+"\n" {
		t.Fatalf("--version: exit %d %q", code, flagOut)
	}
	code, out, _ = cli(t, "version", "-o", "json")
	var b buildInfo
	if err := json.Unmarshal([]byte(out), &b); code != exitOK || err != nil || b.Version == "" || !strings.HasPrefix(b.GoVersion, "go") {
		t.Fatalf("version -o json: exit %d %v %q", code, err, out)
	}
	if code, _, _ := cli(t, "version", "-o", "yaml"); code != exitUsage {
		t.Fatalf("version -o yaml: exit %d", code)
	}
}

func TestBuildInfoShort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		b    buildInfo
		want string
	}{
		{buildInfo{Version: "v0.3.0"}, "v0.3.0"},
		{buildInfo{Version: "(devel)", Revision: "0123456789abcdef0123", Time: "2026-12-04T21:00:00Z", Modified: true}, "(devel) 0123456789ab-dirty 2026-12-04T21:00:00Z"},
		// a pseudo-version names the revision already
		{buildInfo{Version: "v0.0.0-20261204210000-0123456789ab+dirty", Revision: "0123456789abcdef0123", Modified: true}, "v0.0.0-20261204210000-0123456789ab+dirty"},
	} {
		if got := tc.b.short(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.b, got, tc.want)
		}
	}
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestRunRefsPrefixAndLast(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "approval")
	if code, _, stderr := fx.cli("runs", "show", "last"); code != exitUsage || !strings.Contains(stderr, "no last run") {
		t.Fatalf("show last of an empty store: exit %d %s", code, stderr)
	}
	a := fx.run(exitWaiting, `{}`).RunID
	b := fx.run(exitWaiting, `{}`).RunID
	n := commonPrefix(a, b)
	if n == 0 {
		t.Fatalf("run ids %s and %s share no prefix", a, b)
	}
	shortA := a[:n+1]

	code, out, stderr := fx.cli("runs", "show", a[:n])
	if code != exitUsage || !strings.Contains(stderr, "matches more than one run") || !strings.Contains(stderr, a) || !strings.Contains(stderr, b) || out != "" {
		t.Fatalf("show an ambiguous prefix: exit %d %q %s", code, out, stderr)
	}
	if code, _, stderr := fx.cli("runs", "show", "zz"+a); code != exitUsage || !strings.Contains(stderr, "is not in") {
		t.Fatalf("show an unknown run: exit %d %s", code, stderr)
	}
	if code, out, _ := fx.cli("runs", "show", "last"); code != exitOK || !strings.HasPrefix(out, "run "+b+"\n") {
		t.Fatalf("show last: exit %d\n%s", code, out)
	}
	if code, out, _ := fx.cli("runs", "show", shortA, "-o", "json"); code != exitOK || !strings.Contains(out, `"id": "`+a+`"`) {
		t.Fatalf("show %s: exit %d\n%s", shortA, code, out)
	}
	if code, out, _ := fx.cli("runs", "trace", shortA); code != exitOK || out == "" {
		t.Fatalf("trace %s: exit %d", shortA, code)
	}
	if code, out, _ := fx.cli("runs", "resume", shortA); code != exitWaiting || !strings.Contains(out, "run "+a) {
		t.Fatalf("resume %s: exit %d\n%s", shortA, code, out)
	}
	var d decision
	code, out, stderr = fx.cli("runs", "approve", shortA, "review", "-o", "json")
	decodeOne(t, out, &d)
	if code != exitWaiting || d.Approval.Status != "approved" || d.Result == nil || d.Result.RunID != a {
		t.Fatalf("approve %s: exit %d %+v %s", shortA, code, d, stderr)
	}
	if code, out, stderr := fx.cli("runs", "settle", shortA, "publish", "--value", `{"recorded": true}`); code != exitOK || !strings.Contains(out, "of run "+a+" settled") {
		t.Fatalf("settle %s: exit %d %s %s", shortA, code, out, stderr)
	}
	if code, out, stderr := fx.cli("runs", "reject", "last", "review"); code != exitRunFailed || !strings.Contains(out, "of run "+b+" rejected") {
		t.Fatalf("reject last: exit %d %s %s", code, out, stderr)
	}
	c := fx.run(exitWaiting, `{}`).RunID
	if code, out, _ := fx.cli("runs", "cancel", "last"); code != exitOK || out != "run "+c+" cancelled\n" {
		t.Fatalf("cancel last: exit %d %q", code, out)
	}
}

// complete asks the CLI what the shell should offer, as the completion
// scripts do, and returns the offers (without descriptions) and the
// directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	code, out, stderr := cli(t, append([]string{"__complete"}, args...)...)
	if code != exitOK {
		t.Fatalf("__complete %v: exit %d %s", args, code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var offers []string
	for _, l := range lines[:len(lines)-1] {
		offers = append(offers, strings.SplitN(l, "\t", 2)[0])
	}
	return offers, lines[len(lines)-1]
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "approval")
	a := fx.run(exitWaiting, `{}`).RunID
	b := fx.run(exitWaiting, `{}`).RunID
	if code, _, _ := fx.cli("runs", "cancel", b); code != exitOK {
		t.Fatal("cancel")
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"runs", "show", "--db", fx.db, ""}, []string{"last", b, a}},
		{[]string{"runs", "show", "--db", fx.db, a}, []string{a}},
		{[]string{"runs", "show", "--db", fx.db, "la"}, []string{"last"}},
		// approve, reject and settle offer the waiting runs, then their pending steps
		{[]string{"runs", "approve", "--db", fx.db, ""}, []string{"last", a}},
		{[]string{"runs", "approve", "--db", fx.db, a, ""}, []string{"review"}},
		{[]string{"runs", "settle", "--db", fx.db, a, "x"}, nil},
		{[]string{"runs", "cancel", "--db", fx.db, ""}, []string{"last", a}},
		{[]string{"runs", "show", "--db", fx.db, a, ""}, nil},
		{[]string{"runs", "list", "--status", ""}, []string{"pending", "running", "waiting", "succeeded", "failed", "cancelled"}},
		{[]string{"runs", "prune", "--status", ""}, []string{"succeeded", "failed", "cancelled"}},
		{[]string{"run", "x", "-o", ""}, []string{"text", "json"}},
		{[]string{"runs", "settle", "--output", ""}, []string{"text", "json"}},
		{[]string{"version", "--output", ""}, []string{"text", "json"}},
		{[]string{"graph", "x", "--format", ""}, []string{"mermaid", "dot"}},
		{[]string{"graph", "x", "-o", ""}, []string{"mermaid", "dot"}},
	} {
		got, directive := complete(t, tc.args...)
		if strings.Join(got, " ") != strings.Join(tc.want, " ") || directive != ":4" {
			t.Errorf("complete %v = %v %s, want %v :4", tc.args, got, directive, tc.want)
		}
	}
	// completing from a store that does not exist offers nothing and creates nothing
	missing := filepath.Join(t.TempDir(), "none", "rein.db")
	if got, _ := complete(t, "runs", "show", "--db", missing, ""); len(got) != 0 {
		t.Errorf("complete from a missing store: %v", got)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
		t.Errorf("completion created %s: %v", missing, err)
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if code, out, stderr := cli(t, "completion", shell); code != exitOK || !strings.Contains(out, "__complete") {
			t.Errorf("completion %s: exit %d %s", shell, code, stderr)
		}
	}
}

func TestPruneDryRunAndConfirmation(t *testing.T) {
	t.Parallel()
	fx := newDurable(t, "once")
	a := fx.run(exitOK, `{"order": "A-1"}`).RunID
	b := fx.run(exitOK, `{"order": "B-2"}`).RunID

	code, out, stderr := fx.cli("runs", "prune", "--dry-run")
	if code != exitOK || !strings.HasPrefix(out, "would prune 2 runs") || !strings.Contains(out, a) || !strings.Contains(out, b) {
		t.Fatalf("prune --dry-run: exit %d\n%s%s", code, out, stderr)
	}
	var dry pruneDryRunJSON
	code, out, _ = fx.cli("runs", "prune", "--dry-run", "--status", "succeeded", "-o", "json")
	decodeOne(t, out, &dry)
	if code != exitOK || !dry.DryRun || len(dry.Runs) != 2 || dry.Runs[0].ID != a {
		t.Fatalf("prune --dry-run -o json: exit %d %s", code, out)
	}
	// deleting every run needs --yes when nobody can be asked
	for _, args := range [][]string{{}, {"--older-than", "0s"}, {"--status", "succeeded"}} {
		code, out, stderr := fx.cli(append([]string{"runs", "prune"}, args...)...)
		if code != exitUsage || out != "" || !strings.Contains(stderr, "--yes") || !strings.Contains(stderr, "nothing was deleted") {
			t.Fatalf("prune %v: exit %d %q %s", args, code, out, stderr)
		}
	}
	if code, _, _ := fx.cli("runs", "show", a); code != exitOK {
		t.Fatalf("a refused prune deleted run %s", a)
	}
	// a prune that leaves a run behind needs no confirmation
	code, out, stderr = fx.cli("runs", "prune", "--older-than", "1h")
	if code != exitOK || out != "pruned 0 runs and 0 blobs\n" {
		t.Fatalf("prune --older-than 1h: exit %d %q %s", code, out, stderr)
	}
	code, out, stderr = fx.cli("runs", "prune", "--yes")
	if code != exitOK || !strings.HasPrefix(out, "pruned 2 runs") {
		t.Fatalf("prune --yes: exit %d %q %s", code, out, stderr)
	}
	if code, out, _ := fx.cli("runs", "prune", "--dry-run"); code != exitOK || out != "would prune 0 runs (dry run: nothing deleted)\n" {
		t.Fatalf("dry run of an empty store: exit %d %q", code, out)
	}
}

func TestGraphOutputFlag(t *testing.T) {
	t.Parallel()
	_, byFormat, _ := cli(t, "graph", "../../examples/refund", "--format", "dot")
	code, byO, stderr := cli(t, "graph", "../../examples/refund", "-o", "dot")
	if code != exitOK || byO != byFormat || !strings.HasPrefix(byO, "digraph") {
		t.Fatalf("graph -o dot: exit %d %s\n%s", code, stderr, byO)
	}
	if code, _, stderr := cli(t, "graph", "../../examples/refund", "-o", "dot", "--format", "mermaid"); code != exitUsage || !strings.Contains(stderr, "disagree") {
		t.Fatalf("graph -o dot --format mermaid: exit %d %s", code, stderr)
	}
}
