// Command rein-temporal carries out the rein commands given --temporal
// HOSTPORT: rein worker, rein run and rein runs approve|reject|settle on a
// Temporal server. rein (cmd/rein) hands such a command line to it
// unchanged, so that the rein program itself links no Temporal SDK; it
// can be run directly too.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
