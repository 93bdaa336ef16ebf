package main

// The backends rein links in. Each registers itself when imported (its
// package's init): store.Open then accepts its DSNs. A program built on
// package rein imports the ones it uses, as here.
import (
	_ "github.com/reinhq/rein/store/postgres" // postgres:// URLs, libpq keyword/value DSNs
	_ "github.com/reinhq/rein/store/sqlite"   // file paths, :memory:
)
