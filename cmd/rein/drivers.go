package main

// The drivers, SDK adapters and formats rein links in. Each registers
// itself when imported (its package's init): store.Open then accepts its
// DSNs, provider.Open builds its models, a workflow task's delivery has
// its file. A program built on package rein imports the ones it uses, as
// here.
import (
	_ "github.com/reinhq/rein/model/anthropic"                   // provider anthropic
	_ "github.com/reinhq/rein/model/openai"                      // providers openai, deepseek, ollama, vllm, lmstudio
	_ "github.com/reinhq/rein/server/workflowtool/delivery/xlsx" // deliverables.xlsx
	_ "github.com/reinhq/rein/store/postgres"                    // postgres:// URLs, libpq keyword/value DSNs
	_ "github.com/reinhq/rein/store/sqlite"                      // file paths, :memory:
)
