package rein_test

// The root package links in no backend: its tests import the ones they
// use, as a program does, and each registers itself when imported.
import (
	_ "github.com/reinhq/rein/store/postgres"
	_ "github.com/reinhq/rein/store/sqlite"
)
