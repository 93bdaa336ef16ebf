package http_test

// The tests open SQLite stores by DSN (store.Open): a program registers the
// drivers it uses by importing them.
import _ "github.com/reinhq/rein/store/sqlite"
