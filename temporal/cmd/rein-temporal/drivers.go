package main

// The drivers, SDK adapters and formats rein-temporal links in, the ones
// rein links (cmd/rein/drivers.go): a worker runs the same flows and
// agents, so it builds the same models and opens the same stores. Each
// registers itself when imported (its package's init).
import (
	_ "github.com/reinhq/rein/model/anthropic"                   // provider anthropic
	_ "github.com/reinhq/rein/model/openai"                      // providers openai, deepseek, ollama, vllm, lmstudio
	_ "github.com/reinhq/rein/server/workflowtool/delivery/xlsx" // deliverables.xlsx of a workflow tool's task
	_ "github.com/reinhq/rein/store/postgres"                    // postgres:// URLs, libpq keyword/value DSNs
	_ "github.com/reinhq/rein/store/sqlite"                      // file paths, :memory:
)
