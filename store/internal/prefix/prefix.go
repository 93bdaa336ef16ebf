// Package prefix turns a string prefix into a byte-wise range, for the
// stores' look-ups of run IDs by prefix: the strings that start with p are
// those in [p, End(p)). Both backends use it.
package prefix

// End returns the least string greater, byte-wise, than every string that
// starts with p; ok is false when there is none (p is empty or all 0xff
// bytes). End may not be valid UTF-8 when p ends in a multi-byte character.
func End(p string) (end string, ok bool) {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}
