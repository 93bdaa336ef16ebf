package redact

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
)

// forms returns the encodings of a secret s that a Redactor looks for.
// folded are those whose letter case does not matter (matched in any
// case, so given ASCII-lowercased): s itself, %-escaped (query and path),
// hex, JSON-escaped (with and without encoding/json's HTML escapes) and
// JSON-escaped twice (a JSON document held in a JSON string, as an agent's
// tool arguments are in its transcript; for a secret holding " or \ that
// differs from once). exact are those whose case matters: base64 in both
// alphabets, padded and raw, and the characters that encode s alone
// wherever it starts in a longer base64 text (at an offset that is a
// multiple of 3 or not: shifted).
func forms(s string) (folded, exact []string) {
	folded = []string{lowerASCII(s), lowerASCII(url.QueryEscape(s)), lowerASCII(url.PathEscape(s)),
		hex.EncodeToString([]byte(s))}
	for _, html := range []bool{false, true} {
		once := jsonEscape(s, html)
		folded = append(folded, lowerASCII(once), lowerASCII(jsonEscape(once, html)))
	}
	b := []byte(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		exact = append(exact, enc.EncodeToString(b), enc.WithPadding(base64.NoPadding).EncodeToString(b))
		for shift := 0; shift < 3; shift++ {
			exact = append(exact, shifted(enc.WithPadding(base64.NoPadding), b, shift))
		}
	}
	return folded, exact
}

// shifted is what a secret b becomes inside a longer base64 text (enc,
// unpadded) when shift bytes (0, 1 or 2) of the same 3-byte group come
// before it: the characters that depend on b's bytes alone, without those
// that also hold the bits of the bytes before or after it.
func shifted(enc *base64.Encoding, b []byte, shift int) string {
	whole := enc.EncodeToString(append(make([]byte, shift), b...))
	first := (8*shift + 5) / 6 // characters holding bits of the bytes before
	last := 8 * (shift + len(b)) / 6
	if first >= last {
		return ""
	}
	return whole[first:last]
}
