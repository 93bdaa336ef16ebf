// Package project turns a folder into a loaded, validated Project: the flow
// (flow.yaml, or the one-step flow of an agent folder's agent.yaml), the
// rein.yaml beside it (exec tools, MCP servers, models, policy, risk,
// review, secrets), the Go tools and models the program gives, a scripted
// model (script.yaml) or a cassette, and the workflow tools its agents
// declare. Every problem of the flow comes back at once, located
// (file:line:col), in a *flow.Error.
//
// Load reads a folder as it is on disk; LoadPinned (and LoadRun) rebuild
// the project of a durable run from the flow text and files it pinned and
// the RunMeta it recorded, never from disk, so a resume sees what the run
// started with (a Cache keeps the parsed flow per pinned text, and the
// parsed rein.yaml while the files it read read the same); LoadConfig
// reads a rein.yaml without a flow. A Project runs through a rein.Client
// (rein.Open, Client.Load and Client.Run); it holds MCP sessions and a
// cassette recorder, so the caller closes it.
package project
