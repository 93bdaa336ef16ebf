// Command server is a real MCP server on stdio, built from the go-sdk's
// server API, for the tests of package tool/mcp and of rein.yaml mcp:.
// Its tools: lookup answers a customer, refund always fails, die ends the
// process during the call, env answers its environment, hang never
// answers, send appends its args to the file $CRM_SENT (one JSON line a
// call), so a test can see whether it ran.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type lookupIn struct {
	ID string `json:"id" jsonschema:"the customer id"`
}

type customer struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type none struct{}

type createIn struct {
	Name string `json:"name"`
}

type archiveIn struct {
	ID string `json:"id"`
}

type message struct {
	To string `json:"to"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "crm", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Finds a customer."},
		func(_ context.Context, _ *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, customer, error) {
			return nil, customer{ID: in.ID, Name: "Customer " + in.ID}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "refund", Description: "Refunds an order."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return nil, nil, fmt.Errorf("refunds are closed today")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "die", Description: "Ends the server mid-call."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "crm: out of memory")
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Answers the variables it was given."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, map[string]string, error) {
			return nil, map[string]string{"CRM_TOKEN": os.Getenv("CRM_TOKEN"), "CRM_MODE": os.Getenv("CRM_MODE"), "UNPASSED": os.Getenv("REIN_TEST_UNPASSED")}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			select {} // ignores the cancellation too
		})
	mcp.AddTool(s, &mcp.Tool{Name: "send", Description: "Sends a message (appends it to $CRM_SENT)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in message) (*mcp.CallToolResult, map[string]bool, error) {
			return nil, map[string]bool{"sent": true}, logCall(in)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "create", Description: "Creates a customer (appends {\"create\": name} to $CRM_SENT)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in createIn) (*mcp.CallToolResult, customer, error) {
			return nil, customer{ID: "c-" + in.Name, Name: in.Name}, logCall(map[string]string{"create": in.Name})
		})
	mcp.AddTool(s, &mcp.Tool{Name: "archive", Description: "Archives a customer (appends {\"archive\": id} to $CRM_SENT)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in archiveIn) (*mcp.CallToolResult, map[string]bool, error) {
			return nil, map[string]bool{"archived": true}, logCall(map[string]string{"archive": in.ID})
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

// logCall appends v as one JSON line to the file $CRM_SENT.
func logCall(v any) error {
	f, err := os.OpenFile(os.Getenv("CRM_SENT"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	line, _ := json.Marshal(v)
	_, err = f.Write(append(line, '\n'))
	return err
}
