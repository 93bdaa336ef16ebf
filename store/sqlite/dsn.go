package sqlite

import (
	"fmt"
	"net/url"
	"strings"
)

// ParseDSN splits a SQLite DSN — a file path, optionally followed by
// "?checkpoint=auto|external" and "&synchronous=normal|full" — into the
// path and the Options it sets (nil when it has no query). An unknown
// parameter or value is an error naming it and what is accepted.
func ParseDSN(dsn string) (string, *Options, error) {
	path, query, ok := strings.Cut(dsn, "?")
	if !ok {
		return dsn, nil, nil
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
