package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/temporal"
)

// scanDeadline bounds the scan of a namespace's histories; a scan cut
// short deletes nothing.
const scanDeadline = 30 * time.Minute

// prunedJSON is what rein runs prune --temporal -o json prints.
type prunedJSON struct {
	*temporal.BlobPruneResult
	Executions int `json:"executions"`
	Events     int `json:"events"`
}

// pruneBlobs runs rein runs prune --temporal ADDR --blobs DIR: it deletes
// the blobs no history of the namespace refers to that are older than
// --older-than (--dry-run lists them). Temporal deletes closed runs
// itself (the namespace's retention); what rein prunes is the blob store.
func pruneBlobs(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var olderThan, output string
	var dryRun bool
	fs := flag.NewFlagSet("runs prune", flag.ContinueOnError)
	c.add(fs)
	fs.StringVar(&olderThan, "older-than", "24h", "delete only blobs last written longer ago than this (at least 1h; 30d, 12h, 90m)")
	fs.BoolVar(&dryRun, "dry-run", false, "list the blobs that would be deleted; delete nothing")
	fs.StringVar(&output, "o", "text", "text or json")
	fs.StringVar(&output, "output", "text", "the same as -o")
	pos, err := parse(fs, args)
	if err != nil {
		return exitUsage, err
	}
	if len(pos) != 0 {
		return exitUsage, usageErr("rein runs prune --temporal takes no arguments, only flags")
	}
	if err := checkOutput(output); err != nil {
		return exitUsage, err
	}
	if c.blobs == "" {
		return exitUsage, usageErr("rein runs prune --temporal prunes the blob store: give it with --blobs DIR (Temporal deletes closed runs itself, after the namespace's retention)")
	}
	age, err := flow.ParseDuration(olderThan)
	if err != nil || age < temporal.MinBlobAge {
		return exitUsage, usageErr(fmt.Sprintf("--older-than %q: give a duration of at least %s (30d, 12h, 90m): a younger blob may belong to a run whose history does not show it yet", olderThan, temporal.MinBlobAge))
	}
	if fi, err := os.Stat(c.blobs); err != nil {
		return exitFailed, fmt.Errorf("--blobs %s: %w", c.blobs, err)
	} else if !fi.IsDir() {
		return exitFailed, fmt.Errorf("--blobs %s is not a directory: give the blob store the workers write to", c.blobs)
	}
	before := time.Now().Add(-age) // before the scan: a blob written during it is younger
	plain := c
	plain.blobs = "" // the scan reads raw payloads, never the blobs
	cl, err := plain.dial()
	if err != nil {
		return exitUsage, err
	}
	defer cl.Close()
	sctx, cancel := context.WithTimeout(ctx, scanDeadline)
	defer cancel()
	scan, err := temporal.ReferencedBlobs(sctx, cl, c.namespace, temporal.BlobScanLimits{})
	if err != nil {
		return exitFailed, fmt.Errorf("%w (nothing was deleted)", err)
	}
	res, err := temporal.PruneBlobs(c.blobs, scan.Referenced, before, dryRun)
	if err != nil {
		return exitFailed, fmt.Errorf("%w (%d blobs deleted before it)", err, res.Blobs)
	}
	if output == "json" {
		return exitOK, encodeJSON(stdout, prunedJSON{BlobPruneResult: res, Executions: scan.Executions, Events: scan.Events})
	}
	if dryRun {
		for _, sum := range res.Pruned {
			fmt.Fprintln(stdout, sum)
		}
		fmt.Fprintf(stdout, "would prune %d %s (%d bytes) and %d temporary %s (dry run: nothing deleted)\n", res.Blobs, plural(res.Blobs, "blob", "blobs"), res.Bytes, res.Temporaries, plural(res.Temporaries, "file", "files"))
	} else {
		fmt.Fprintf(stdout, "pruned %d %s (%d bytes freed) and %d temporary %s\n", res.Blobs, plural(res.Blobs, "blob", "blobs"), res.Bytes, res.Temporaries, plural(res.Temporaries, "file", "files"))
	}
	fmt.Fprintf(stderr, "rein: kept %d %s referenced by %d %s of namespace %s, and %d newer than %s\n", res.Referenced, plural(res.Referenced, "blob", "blobs"), scan.Executions, plural(scan.Executions, "execution", "executions"), c.namespace, res.Recent, olderThan)
	return exitOK, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
