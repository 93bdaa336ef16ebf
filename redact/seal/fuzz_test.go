package seal_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/reinhq/rein/redact/seal"
)

// FuzzOpen feeds Open arbitrary payloads: it never panics, opens only what
// Seal made (a payload that opens is the one sealed), and refuses
// everything else with a located *Error or a *MissingKeyError.
func FuzzOpen(f *testing.F) {
	k, _ := newKey(f, "k1")
	c, err := seal.New(k)
	if err != nil {
		f.Fatal(err)
	}
	plain := []byte(`{"a":"secret-value-1"}`)
	good, _ := c.Seal(plain, []byte("aad"))
	for _, s := range []string{good, good[:len(good)-1], "", "rein-seal.v1.", "rein-seal.v1.k2.AAAA", "rein-seal.v1.k1.", seal.Prefix + "k1.!!"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := c.Open(in, []byte("aad"))
		if err == nil {
			if !bytes.Equal(got, plain) {
				t.Fatalf("Open(%q) = %q: a payload Seal did not make opened", in, got)
			}
			return
		}
		var se *seal.Error
		var mk *seal.MissingKeyError
		switch {
		case errors.As(err, &se):
			if se.Offset < 0 || se.Offset > len(in) && se.Offset != seal.MaxSealedBytes {
				t.Fatalf("Open(%q): offset %d outside the payload", in, se.Offset)
			}
		case errors.As(err, &mk):
		default:
			t.Fatalf("Open(%q) = %v: neither *seal.Error nor *seal.MissingKeyError", in, err)
		}
	})
}
