// Command rein runs, validates, draws and traces rein flows. Run `rein help`
// for the commands; docs/ in the repository documents the flow format.
package main

import (
	"context"
	"os"
)

func main() {
	ctx, stop := notifyInterrupts(context.Background())
	code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
