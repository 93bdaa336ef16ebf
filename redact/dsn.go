package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// DSNMask replaces a password in a DSN; it keeps the DSN readable as one
// (url.URL.Redacted writes the same).
const DSNMask = "xxxxx"

// secretParams are the DSN parameters (URL query or key=value) that hold
// a secret.
var secretParams = []string{"password", "sslpassword", "passwd", "pwd", "secret", "token", "access_token", "api_key", "apikey"}

// kvParam matches one secret parameter of a key=value DSN
// ("host=db password='a b' user=rein"), a value quoted or not.
var kvParam = regexp.MustCompile(`(?i)(\b(?:` + strings.Join(secretParams, "|") + `)\s*=\s*)('(?:[^'\\]|\\.)*'[^\s&;]*|[^\s&;]+)`)

// DSN returns dsn with its passwords replaced by DSNMask, in every form:
// a URL's user:password@, secret query parameters (?password=,
// ?sslpassword=), and key=value pairs (password=… host=…). A DSN without
// a password is returned unchanged.
func DSN(dsn string) string {
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok || strings.ContainsAny(scheme, " =") {
		return kvParam.ReplaceAllString(dsn, "${1}"+DSNMask)
	}
	// Edited in place, not parsed and printed again, so that the rest of
	// the DSN stays exactly as written. The user info ends at the last @
	// before the query (a password may hold an unescaped @ or /).
	q := strings.IndexByte(rest, '?')
	if q < 0 {
		q = len(rest)
	}
	if at := strings.LastIndexByte(rest[:q], '@'); at >= 0 {
		if c := strings.IndexByte(rest[:at], ':'); c >= 0 {
			rest = rest[:c+1] + DSNMask + rest[at:]
		}
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		query, frag, hasFrag := strings.Cut(rest[q+1:], "#")
		params := strings.Split(query, "&")
		for i, p := range params {
			k, _, _ := strings.Cut(p, "=")
			if name, err := url.QueryUnescape(k); err == nil && isSecretParam(name) {
				params[i] = k + "=" + DSNMask
			}
		}
		rest = rest[:q+1] + strings.Join(params, "&")
		if hasFrag {
			rest += "#" + frag
		}
	}
	return scheme + "://" + rest
}

// Passwords returns the passwords dsn holds (URL user info, secret query
// parameters, key=value pairs), as they are and unescaped; none when dsn
// is not a DSN or holds none.
func Passwords(dsn string) []string {
	var out []string
	if strings.Contains(dsn, "://") {
		if u, err := url.Parse(dsn); err == nil {
			if u.User != nil {
				if p, ok := u.User.Password(); ok {
					out = append(out, p)
				}
			}
			for k, vs := range u.Query() {
				if isSecretParam(k) {
					out = append(out, vs...)
				}
			}
		}
	}
	for _, m := range kvParam.FindAllStringSubmatch(dsn, -1) {
		v := m[2]
		if strings.HasPrefix(v, "'") {
			v = strings.ReplaceAll(strings.Trim(v, "'"), `\'`, "'")
		}
		out = appendNew(out, v)
		if u, err := url.QueryUnescape(v); err == nil {
			out = appendNew(out, u)
		}
	}
	return out
}

func isSecretParam(k string) bool {
	k = strings.ToLower(k)
	for _, p := range secretParams {
		if k == p {
			return true
		}
	}
	return false
}
