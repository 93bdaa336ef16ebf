package store

import (
	"fmt"
	"slices"
	"strings"
)

// The schemes Open gives a DSN that has none of its own: a file path or
// ":memory:" is SchemeFile (store/sqlite registers it), a libpq
// keyword/value DSN ("host=db user=rein dbname=rein") is SchemePostgres
// (store/postgres registers it).
const (
	SchemeFile     = "file"
	SchemePostgres = "postgres"
)

// drivers maps the scheme of each of rein's own backends to the package to
// import for it, so that an error about a missing driver can name it.
var drivers = map[string]string{
	SchemeFile:     "github.com/reinhq/rein/store/sqlite",
	"sqlite":       "github.com/reinhq/rein/store/sqlite",
	SchemePostgres: "github.com/reinhq/rein/store/postgres",
	"postgresql":   "github.com/reinhq/rein/store/postgres",
}

// backend names the database of each of rein's driver packages.
var backend = map[string]string{
	"github.com/reinhq/rein/store/sqlite":   "SQLite",
	"github.com/reinhq/rein/store/postgres": "PostgreSQL",
}

// libpqKeys are the keywords of a libpq keyword/value connection string
// (PostgreSQL's "Parameter Key Words") and pgxpool's own (pool_*): a DSN
// that names one of them is PostgreSQL's, never a file.
var libpqKeys = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`host hostaddr port dbname user password passfile
		require_auth channel_binding connect_timeout client_encoding options
		application_name fallback_application_name keepalives keepalives_idle
		keepalives_interval keepalives_count tcp_user_timeout replication
		gssencmode sslmode requiressl sslnegotiation sslcompression sslcert sslkey
		sslkeylogfile sslpassword sslcertmode sslrootcert sslcrl sslcrldir sslsni
		requirepeer ssl_min_protocol_version ssl_max_protocol_version
		min_protocol_version max_protocol_version krbsrvname gsslib gssdelegation
		service servicefile target_session_attrs load_balance_hosts
		pool_max_conns pool_min_conns pool_min_idle_conns pool_max_conn_lifetime
		pool_max_conn_lifetime_jitter pool_max_conn_idle_time pool_health_check_period
		statement_cache_capacity description_cache_capacity default_query_exec_mode`) {
		libpqKeys[k] = true
	}
}

// SchemeOf says which driver Open hands dsn to, without opening anything:
//
//   - "scheme://…" (any scheme, compared in lower case) is that scheme's;
//     so is "scheme:…" for a scheme Open knows ("file:runs.db",
//     "sqlite:runs.db", "postgres:…") or a driver registered;
//   - a libpq keyword/value DSN ("host=db port=5432 dbname=rein", values
//     in single quotes when they hold spaces) naming at least one libpq or
//     pgxpool keyword is SchemePostgres's;
//   - ":memory:" and anything else is a file path, SchemeFile's.
//
// It fails on an empty DSN, and on a string that is neither a path nor a
// DSN: key=value settings that name no PostgreSQL keyword, or that name
// one but do not parse (an unquoted value holding a space), and a
// "scheme://" URL with spaces around it. Its errors show the DSN with its
// passwords hidden (redact.DSN), or, for key=value settings, only the keys.
func SchemeOf(dsn string) (string, error) {
	scheme, _, err := classify(dsn, registered)
	return scheme, err
}

// classify is SchemeOf with the test for a registered scheme given, so it
// stays a pure function (FuzzSchemeOf); keyword is set for a libpq
// keyword/value DSN.
func classify(dsn string, isRegistered func(string) bool) (scheme string, keyword bool, err error) {
	if dsn == "" {
		return "", false, fmt.Errorf("store: empty DSN: pass a SQLite file, :memory: or a postgres:// URL")
	}
	if dsn == ":memory:" {
		return SchemeFile, false, nil
	}
	if t := strings.TrimSpace(dsn); t != dsn {
		if _, rest, ok := cutScheme(t); ok && strings.HasPrefix(rest, "//") {
			return "", false, fmt.Errorf("store: DSN %s has spaces around it: remove them", quoteDSN(t))
		}
	}
	if s, rest, ok := cutScheme(dsn); ok {
		if strings.HasPrefix(rest, "//") {
			return s, false, nil
		}
		if _, known := drivers[s]; known || isRegistered(s) {
			return s, false, nil
		}
	}
	pairs, perr := parseKeywords(dsn)
	if perr == nil {
		for _, p := range pairs {
			if libpqKeys[strings.ToLower(p)] {
				return SchemePostgres, true, nil
			}
		}
		if len(pairs) > 1 || strings.ContainsAny(dsn, " \t\n\r\f\v") {
			return "", false, fmt.Errorf("store: the DSN is neither a file path nor a database URL: it holds key=value settings (%s) but no PostgreSQL keyword (host, port, dbname, user, password, sslmode, …); pass a SQLite file, :memory:, a postgres:// URL or a libpq keyword/value DSN",
				keyList(pairs))
		}
		return SchemeFile, false, nil
	}
	// Not key=value pairs throughout: a path, unless it holds a libpq
	// keyword's setting beside other words (a password with a space in
	// it, unquoted), which must never become a file named after it.
	if fields := strings.Fields(dsn); len(fields) > 1 {
		settings := 0
		for _, f := range fields {
			k, _, ok := strings.Cut(f, "=")
			if !ok || !isKey(k) {
				continue
			}
			if libpqKeys[strings.ToLower(k)] {
				return "", false, fmt.Errorf("store: the DSN looks like a PostgreSQL keyword/value DSN (it sets %s) but does not parse: %w; quote a value that holds spaces in single quotes (password='a b'), or pass a postgres:// URL",
					strings.ToLower(k), perr)
			}
			settings++
		}
		if settings > 1 {
			return "", false, fmt.Errorf("store: the DSN is neither a file path nor a database URL: it holds key=value settings beside other words; pass a SQLite file, :memory:, a postgres:// URL or a libpq keyword/value DSN")
		}
	}
	return SchemeFile, false, nil
}

// cutScheme splits "scheme:rest" where scheme is an RFC 3986 scheme of two
// characters or more (so "C:\runs.db" keeps its drive letter), returned
// in lower case.
func cutScheme(dsn string) (scheme, rest string, ok bool) {
	i := strings.IndexByte(dsn, ':')
	if i < 2 {
		return "", "", false
	}
	for j := 0; j < i; j++ {
		c := dsn[j]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case j > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return "", "", false
		}
	}
	return strings.ToLower(dsn[:i]), dsn[i+1:], true
}

// parseKeywords reads dsn as libpq reads a keyword/value connection string
// (conninfo_parse): pairs key = value separated by whitespace, spaces
// allowed around "=", a value either single-quoted (backslash escapes the
// next character) or running to the next whitespace (backslash escapes
// there too). It returns the keys in order. A key must be an identifier
// ([A-Za-z_][A-Za-z0-9_]*). It never allocates more than the keys and
// reads each byte once.
func parseKeywords(dsn string) ([]string, error) {
	var keys []string
	i, n := 0, len(dsn)
	skip := func() {
		for i < n && isSpace(dsn[i]) {
			i++
		}
	}
	for skip(); i < n; skip() {
		start := i
		for i < n && !isSpace(dsn[i]) && dsn[i] != '=' {
			i++
		}
		key := dsn[start:i]
		if !isKey(key) {
			return nil, fmt.Errorf("byte %d starts a word that is not a keyword", start+1)
		}
		skip()
		if i == n || dsn[i] != '=' {
			return nil, fmt.Errorf("the word at byte %d has no \"=\" after it", start+1)
		}
		i++
		skip()
		if i < n && dsn[i] == '\'' {
			i++
			closed := false
			for i < n {
				if dsn[i] == '\\' {
					i += 2
					continue
				}
				if dsn[i] == '\'' {
					closed = true
					i++
					break
				}
				i++
			}
			if !closed {
				return nil, fmt.Errorf("the value of %s has no closing quote", keyList([]string{key}))
			}
			if i < n && !isSpace(dsn[i]) {
				return nil, fmt.Errorf("the value of %s goes on after its closing quote", keyList([]string{key}))
			}
		} else {
			for i < n && !isSpace(dsn[i]) {
				if dsn[i] == '\\' {
					i++
				}
				i++
			}
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no key=value pairs")
	}
	return keys, nil
}

// keyList names at most the first eight keys, each cut to 32 bytes, for an
// error (keys, never values: a value may be a password).
func keyList(keys []string) string {
	var b strings.Builder
	for i, k := range keys {
		if i == 8 {
			b.WriteString(", …")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if len(k) > 32 {
			k = k[:32] + "…"
		}
		b.WriteString(k)
	}
	return b.String()
}

func isKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// isSpace is libpq's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// registeredSchemes returns the registered schemes, sorted.
func registeredSchemes() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(openers))
	for s := range openers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
