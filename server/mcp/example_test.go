package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/server/mcp"
)

// A program serves a flow folder over MCP with a Client of its own: its
// tools, its workflow tool (tasks are runs of the Client's store) and
// runs_list/runs_show. Here a client connects in memory; a program serves
// srv.ServeStdio(ctx, os.Stdin, os.Stdout), or mounts srv.Handler() at
// /mcp of its HTTP server.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "rein-mcp-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	c, err := rein.Open(ctx, rein.Config{DB: filepath.Join(dir, "runs.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	srv, err := mcp.New(ctx, c, &mcp.Options{Dirs: []string{"testdata/notes"}, Log: os.Stderr})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	st, ct := sdk.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, st) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "host"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(srv.Tools())
	fmt.Println(res.Content[0].(*sdk.TextContent).Text)
	cs.Close()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
	// Output:
	// [echo notes_workflow runs_list runs_show wipe]
	// {"text":"hi"}
}
