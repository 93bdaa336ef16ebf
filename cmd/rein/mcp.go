package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/server/mcp"
	"github.com/reinhq/rein/store"
)

func newMCPCmd(s *streams) *cobra.Command {
	var l loadFlags
	var db dbFlag
	cmd := &cobra.Command{
		Use:   "mcp DIR...",
		Short: "Serve the tools of flow folders over MCP on stdio",
		Long: `Serve over the Model Context Protocol, on stdin and stdout (newline-delimited
JSON-RPC), so an MCP-capable agent host can call rein's tools.

DIR is a flow folder (it holds flow.yaml) or a folder of flow folders. Served:
one workflow tool per flow, <name>_workflow, whose actions (start, submit,
submit_from_source, prepare_delivery, status, cancel) drive the flow's tasks
in the run store named by --db (rein tool does the same from a shell); every
tool the flows can call (their rein.yaml's and their own tools: and the tools
of the MCP servers their rein.yaml names), each through the policy gate (the
rein.yaml policy: and flow policy: of every folder that offers it, and the
default rules always; refusals are also written to stderr) and its schemas;
and the read-only runs_list and runs_show over --db.

The host's model wrote every argument, so a call of a write, external or
destructive tool (and a workflow start whose input drives one) needs a
person's approval: the host's user is asked with MCP elicitation when the
client supports it (accept makes the call once; decline refuses it),
otherwise the call is refused with what to do. Every call is journaled in
--db, in a run of flow mcp per rein mcp process (rein runs list --flow mcp,
rein runs show RUN); its idempotency key is <that run>/<tool>/<n>. A tool error is an MCP tool error whose text is a JSON object
(the error envelope {class, error_type, message, hint?, retryable, pointer?}, and a workflow
tool's problems), with no structured content.

A line longer than 4 MiB, nested deeper than 64, holding more than 131,072
JSON values or not JSON-RPC is answered with a JSON-RPC error and the session
goes on; answers carry each request's id exactly as sent. When stdin ends, the
requests read are answered, then rein mcp exits 0.

Nothing but JSON-RPC is written to stdout; messages go to stderr.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The store opens once the flows loaded, or before, when their
			// agents declare workflow tools (workflow:): those are made as
			// the flows load, their tasks runs of the store.
			var st store.Store
			defer func() {
				if st != nil {
					closeStore(s, st)
				}
			}()
			srv, err := mcp.New(cmd.Context(), nil, &mcp.Options{
				Dirs: args, Load: l.loadOptions(), Version: readBuildInfo().short(), Log: s.err, LogPrefix: "rein mcp",
				// loadFlags.load checks the flags, prints a flow's problems
				// and warnings, and has the CLI's streams hide its secrets.
				Loader: func(path string, o *project.LoadOptions) (*project.Project, error) {
					l.workflow = o.Workflow
					return l.load(s, path)
				},
				Open: func(ctx context.Context) (*rein.Client, error) {
					var err error
					if st, _, err = db.open(ctx); err != nil {
						return nil, err
					}
					return rein.Open(ctx, rein.Config{Store: st, Sink: s.withTelemetry(nil)})
				},
			})
			if ee := (*exitError)(nil); errors.As(err, &ee) { // Loader's or Open's, already worded
				return ee
			} else if err != nil {
				return usageErr("%v", err)
			}
			defer srv.Close()
			fmt.Fprintf(s.err, "rein mcp: serving %d tools on stdio\n", len(srv.Tools()))
			// The protocol goes to the raw streams: the CLI's stdout
			// writer escapes and redacts each write, which could alter a
			// frame. The server hides secrets in each answer before it is
			// encoded instead.
			return srv.ServeStdio(cmd.Context(), s.rawIn, s.rawOut)
		},
	}
	l.register(cmd)
	db.register(cmd)
	return cmd
}
