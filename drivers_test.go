package rein_test

// The root package links in no driver and no provider SDK: its tests
// import the ones they use, as a program does, and each registers itself
// when imported.
import (
	_ "github.com/reinhq/rein/model/anthropic"
	_ "github.com/reinhq/rein/model/openai"
	_ "github.com/reinhq/rein/store/postgres"
	_ "github.com/reinhq/rein/store/sqlite"
)
