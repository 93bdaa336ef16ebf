package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentUsage: rein agent --temporal checks its command line before it
// dials: a folder without agent.yaml, a missing task, an empty one and a
// missing --temporal are usage errors (exit 2) that say what is wrong.
func TestAgentUsage(t *testing.T) {
	agentDir := filepath.Join("..", "..", "..", "examples", "support-agent")
	flowDir := filepath.Join("..", "..", "testdata", "flows", "approve")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", flowDir, "task", "--temporal", "127.0.0.1:1"}, "holds no agent.yaml"},
		{[]string{"agent", agentDir, "--temporal", "127.0.0.1:1"}, "takes an agent folder and a task"},
		{[]string{"agent", agentDir, "", "--temporal", "127.0.0.1:1"}, "the task is empty"},
		{[]string{"agent", agentDir, "refund order 1042"}, "--temporal HOSTPORT is required"},
	} {
		var out, errs bytes.Buffer
		code := Main(context.Background(), tc.args, &out, &errs)
		if code != exitUsage || !strings.Contains(errs.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errs.String(), exitUsage, tc.want)
		}
	}
}

// TestFoldersAgents: rein worker --temporal serves agent folders as it
// does flow folders, found in a folder of them too.
func TestFoldersAgents(t *testing.T) {
	examples := filepath.Join("..", "..", "..", "examples")
	got := folders([]string{examples})
	if !contains(got, filepath.Join(examples, "support-agent")) || !contains(got, filepath.Join(examples, "resume-screen")) {
		t.Errorf("folders of examples/: %v", got)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if filepath.Clean(x) == filepath.Clean(s) {
			return true
		}
	}
	return false
}
