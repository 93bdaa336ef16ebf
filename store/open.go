package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/reinhq/rein/redact"
)

// An Opener opens the store a DSN names. It gets the DSN exactly as Open
// was given it (scheme, query and all) and returns an open Store or an
// error that never repeats a password. It may be called concurrently.
type Opener func(ctx context.Context, dsn string) (Store, error)

// ErrNoDriver is wrapped by Open's error when no driver is registered for
// the DSN's scheme: the program does not import the backend's package.
var ErrNoDriver = errors.New("no store driver")

var (
	mu      sync.RWMutex
	openers = map[string]Opener{}
)

// Register makes open the driver of the DSNs whose scheme (SchemeOf) is
// scheme. A backend calls it from its package's init, so that importing
// the package is what makes Open accept its DSNs (as database/sql drivers
// do): store/sqlite registers SchemeFile (file paths, ":memory:",
// "file:…") and "sqlite", store/postgres SchemePostgres (postgres:// URLs
// and libpq keyword/value DSNs) and "postgresql".
//
// scheme is compared in lower case and must be an RFC 3986 scheme of two
// characters or more ("postgres", "my-db+tls"). Register panics when
// scheme is not one, when open is nil, or when scheme already has a
// driver: two packages claiming one scheme is a programming error. It is
// safe for concurrent use.
func Register(scheme string, open Opener) {
	if open == nil {
		panic("store: Register " + scheme + ": the opener is nil")
	}
	s, rest, ok := cutScheme(scheme + ":")
	if !ok || rest != "" {
		panic(fmt.Sprintf("store: Register %q: not a URL scheme (a letter, then letters, digits, +, - or .; two characters or more)", scheme))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := openers[s]; dup {
		panic("store: Register called twice for scheme " + s)
	}
	openers[s] = open
}

// Schemes returns the schemes that have a driver in this program, sorted.
func Schemes() []string { return registeredSchemes() }

func registered(scheme string) bool {
	mu.RLock()
	defer mu.RUnlock()
	_, ok := openers[scheme]
	return ok
}

// Open opens the durable store dsn names, with the driver registered for
// its scheme (SchemeOf): with store/sqlite imported, a file path (created
// with its folder if missing; "?checkpoint=external" and
// "&synchronous=full" as sqlite.ParseDSN reads them), ":memory:" (a
// throwaway database) or "file:"/"sqlite:" followed by a path; with
// store/postgres imported, a postgres:// or postgresql:// URL or a libpq
// keyword/value DSN ("host=db user=rein password=… dbname=rein").
//
// It fails on an empty DSN, on a string that is neither a path nor a DSN
// (see SchemeOf), and, wrapping ErrNoDriver, on a DSN whose driver the
// program does not import: the error names the package to import. The
// driver's own errors (store.ErrDamaged, a refused connection) are
// returned as the driver wrote them. No error repeats a password.
func Open(ctx context.Context, dsn string) (Store, error) {
	scheme, keyword, err := classify(dsn, registered)
	if err != nil {
		return nil, err
	}
	mu.RLock()
	open := openers[scheme]
	mu.RUnlock()
	if open == nil {
		return nil, noDriver(dsn, scheme, keyword)
	}
	return open(ctx, dsn)
}

// noDriver says which import the program lacks for dsn, or, for a scheme
// none of rein's backends has, which schemes it could use.
func noDriver(dsn, scheme string, keyword bool) error {
	what := "DSN " + quoteDSN(dsn)
	if keyword {
		// Neither keys nor values are shown: a value may be a password
		// that redact.DSN does not know as one.
		what = "the keyword/value DSN"
	}
	if pkg, ok := drivers[scheme]; ok {
		return fmt.Errorf("store: open %s (%s): %w in this program: add import _ %q", what, backend[pkg], ErrNoDriver, pkg)
	}
	have := "none"
	if s := registeredSchemes(); len(s) > 0 {
		have = strings.Join(s, ", ")
	}
	return fmt.Errorf("store: open %s: %w for scheme %q in this program (it has: %s); rein keeps runs in SQLite (a file path or :memory:, import _ %q) or PostgreSQL (a postgres:// URL, import _ %q)",
		what, ErrNoDriver, scheme, have, drivers[SchemeFile], drivers[SchemePostgres])
}

// quoteDSN is dsn quoted for an error, its passwords hidden, at most 200
// bytes of it.
func quoteDSN(dsn string) string {
	s := redact.DSN(dsn)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return fmt.Sprintf("%q", s)
}
