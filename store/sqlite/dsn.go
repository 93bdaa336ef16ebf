package sqlite

import (
	"fmt"
	"net/url"
	"strings"
)

// ParseDSN splits a SQLite DSN into the path and the Options it sets (nil
// when it has no query). The DSN is a file path or ":memory:", optionally
// written as a URI ("file:runs.db", "sqlite:runs.db", "file:///var/lib/rein/rein.db",
// "sqlite://localhost/var/lib/rein/rein.db": the prefix is dropped and a
// %XX escape in the path decoded, and a URI names a file of this host),
// then optionally "?checkpoint=auto|external" and
// "&synchronous=normal|full". An unknown parameter or value is an error
// naming it and what is accepted.
func ParseDSN(dsn string) (string, *Options, error) {
	path, query, hasQuery := strings.Cut(dsn, "?")
	path, err := uriPath(path)
	if err != nil {
		return "", nil, fmt.Errorf("sqlite: DSN %q: %w", dsn, err)
	}
	if !hasQuery {
		return path, nil, nil
	}
	vals, err := url.ParseQuery(query)
	if err != nil {
		return "", nil, fmt.Errorf("sqlite: DSN %q: query %q: %w", dsn, query, err)
	}
	o := &Options{}
	for k, v := range vals {
		val := v[len(v)-1]
		switch k {
		case "checkpoint":
			o.Checkpoint = Checkpoint(val)
		case "synchronous":
			o.Synchronous = val
		default:
			return "", nil, fmt.Errorf("sqlite: DSN %q: unknown parameter %q: want checkpoint=auto|external or synchronous=normal|full", dsn, k)
		}
	}
	if _, err := o.withDefaults(); err != nil {
		return "", nil, fmt.Errorf("sqlite: DSN %q: %w", dsn, err)
	}
	return path, o, nil
}

// uriPath drops a "file:" or "sqlite:" prefix (any case) and, after it,
// an empty or "localhost" authority, and decodes the path's %XX escapes.
// A plain path is returned as it is.
func uriPath(s string) (string, error) {
	var rest string
	switch {
	case len(s) >= 5 && strings.EqualFold(s[:5], "file:"):
		rest = s[5:]
	case len(s) >= 7 && strings.EqualFold(s[:7], "sqlite:"):
		rest = s[7:]
	default:
		return s, nil
	}
	if auth, ok := strings.CutPrefix(rest, "//"); ok {
		host, path, _ := strings.Cut(auth, "/")
		if host != "" && !strings.EqualFold(host, "localhost") {
			return "", fmt.Errorf("host %q: a SQLite DSN names a file of this host (file:///abs/path.db or file:rel/path.db)", host)
		}
		rest = "/" + path
	}
	p, err := url.PathUnescape(rest)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", rest, err)
	}
	if p == "" {
		return "", fmt.Errorf("no path after the scheme")
	}
	return p, nil
}
