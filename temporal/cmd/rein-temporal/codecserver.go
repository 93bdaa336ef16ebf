package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/reinhq/rein/temporal"
)

// serveCodec serves the Temporal codec server (temporal.CodecHandler) on
// --addr until ctx ends: the Temporal UI (its codec endpoint set to this
// server's URL) and temporal CLI (--codec-endpoint) then show the runs
// that --project DIR's keys sealed, and the payloads of --blobs.
func serveCodec(ctx context.Context, args []string, stderr io.Writer) error {
	var c common
	var addr, origin string
	var onTemporal bool
	fs := flag.NewFlagSet("codec-server", flag.ContinueOnError)
	fs.BoolVar(&onTemporal, "temporal", true, "(rein codec-server --temporal: the command of the Temporal backend)")
	fs.StringVar(&addr, "addr", "127.0.0.1:8081", "the HOST:PORT to serve on")
	fs.StringVar(&origin, "cors-origin", "", "the web origin allowed to call it from a browser: the Temporal UI's, like http://localhost:8233")
	fs.StringVar(&c.blobs, "blobs", "", "the workers' blob store: payloads stored by reference are read back from it")
	fs.IntVar(&c.blobMin, "blob-threshold", temporal.DefaultBlobThreshold, "with --blobs: the payload size past which /encode stores a payload by reference")
	fs.StringVar(&c.project, "project", "", "the flow or agent folder whose rein.yaml encryption: names the keys of the runs")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErr("rein codec-server takes no arguments, only flags")
	}
	if c.project == "" && c.blobs == "" {
		return usageErr("rein codec-server needs --project DIR (whose rein.yaml encryption: names the keys) or --blobs DIR: it has nothing to decode")
	}
	if err := c.loadKeys(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("codec server: %w", err)
	}
	srv := &http.Server{Handler: temporal.CodecHandler(c.keys, c.blobCodec(), origin), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(stderr, "rein codec-server: http://%s (key %s, blobs %q, CORS origin %q)\n", ln.Addr(), c.keys.KeyID(), c.blobs, origin)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("codec server: %w", err)
	}
	return nil
}
