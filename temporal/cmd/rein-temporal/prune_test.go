package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestPruneRefuses: rein runs prune --temporal refuses, with exit 2 and
// before it dials the server, a prune without --blobs, an --older-than
// under an hour or not a duration, an argument and an unknown -o; rein
// blobs prune points to it.
func TestPruneRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"runs", "prune", "--temporal", "127.0.0.1:1"}, "--blobs DIR"},
		{[]string{"runs", "prune", "--temporal", "127.0.0.1:1", "--blobs", dir, "--older-than", "30m"}, "at least 1h0m0s"},
		{[]string{"runs", "prune", "--temporal", "127.0.0.1:1", "--blobs", dir, "--older-than", "soon"}, `--older-than "soon"`},
		{[]string{"runs", "prune", "run-1", "--temporal", "127.0.0.1:1", "--blobs", dir}, "takes no arguments"},
		{[]string{"runs", "prune", "--temporal", "127.0.0.1:1", "--blobs", dir, "-o", "yaml"}, "give text or json"},
		{[]string{"blobs", "prune", "--temporal", "127.0.0.1:1", "--blobs", dir}, "rein runs prune --temporal"},
	} {
		var out, errb bytes.Buffer
		if code := Main(context.Background(), c.args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errb.String(), exitUsage, c.want)
		}
	}
}
