// Package seal is rein's payload codec: it encrypts at rest the payloads
// that hold a secret (AES-256-GCM with a random nonce, each sealed payload
// naming the id of its key), so a resumed run reads what the live run read
// while the journal never holds the secret in clear. Keys come from
// rein.yaml encryption: (package project reads them); older keys can be
// kept for reading, so a key can be rotated.
//
// A sealed payload is text: "rein-seal.v1.<key id>.<base64url of the
// nonce and the ciphertext>". Open is bounded: it refuses an oversized or
// garbled payload with an *Error that says at which byte and why, and a
// payload of a key it does not hold with a *MissingKeyError. No error
// holds key material or the plaintext.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Prefix starts every sealed payload, with the format's version.
const Prefix = "rein-seal.v1."

// MaxPlainBytes is the largest payload Seal encrypts (far above a step's
// default max_output_bytes of 1 MiB); MaxSealedBytes the longest sealed
// payload Open reads.
const (
	MaxPlainBytes  = 64 << 20
	MaxSealedBytes = len(Prefix) + MaxKeyIDBytes + 1 + (MaxPlainBytes+nonceBytes+tagBytes+2)/3*4
)

// MaxKeyIDBytes bounds a key id.
const MaxKeyIDBytes = 64

// KeySize is the size of an AES-256 key.
const KeySize = 32

const (
	nonceBytes = 12
	tagBytes   = 16
)

var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckKeyID reports what is wrong with a key id, or "" when it is one:
// 1 to 64 letters, digits, _ and -.
func CheckKeyID(id string) string {
	if !keyIDPattern.MatchString(id) {
		return "must be 1 to 64 letters, digits, _ and - (like k2 or 2026-12)"
	}
	return ""
}

// Key is one key of a Codec: its id and its 256 bits. Its String and
// GoString never show the bits.
type Key struct {
	ID  string
	raw [KeySize]byte
}

func (k Key) String() string   { return "seal.Key{" + k.ID + "}" }
func (k Key) GoString() string { return k.String() }

// ParseKey reads the key named id from text: 32 bytes as base64 (either
// alphabet, padded or not) or hex, surrounding white space ignored, or
// exactly 32 raw bytes. source says where text came from ("key_file
// keys/k2.key", "key_env REIN_KEY") for the error, which never quotes text.
func ParseKey(id string, text []byte, source string) (Key, error) {
	if msg := CheckKeyID(id); msg != "" {
		return Key{}, fmt.Errorf("key id %q %s", id, msg)
	}
	k := Key{ID: id}
	if len(text) == KeySize && !printable(text) {
		copy(k.raw[:], text)
		return k, nil
	}
	s := strings.TrimSpace(string(text))
	for _, dec := range []func(string) ([]byte, error){
		base64.StdEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
		base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString, hex.DecodeString,
	} {
		if b, err := dec(s); err == nil && len(b) == KeySize {
			copy(k.raw[:], b)
			return k, nil
		}
	}
	if s == "" {
		return Key{}, fmt.Errorf("key %s: %s is empty: it must hold a 256-bit key, 32 bytes as base64 or hex (make one with: openssl rand -base64 32)", id, source)
	}
	return Key{}, fmt.Errorf("key %s: %s does not hold a 256-bit key (%d bytes of text that are not 32 bytes as base64 or hex): make one with: openssl rand -base64 32", id, source, len(s))
}

// Text is the forms of k's bits that a Redactor must hide (base64 and
// hex), so that key material never reaches a log, a trace or an error.
func (k Key) Text() []string {
	return []string{base64.StdEncoding.EncodeToString(k.raw[:]), base64.URLEncoding.EncodeToString(k.raw[:]),
		hex.EncodeToString(k.raw[:])}
}

func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// Codec seals with its current key and opens with any key it holds. It is
// immutable and safe for concurrent use. The nil *Codec seals nothing.
type Codec struct {
	current string
	aeads   map[string]cipher.AEAD
	ids     []string // current first, then the old keys in order
}

// New returns a Codec that seals with current and opens payloads of
// current and of old (the keys rotated out, kept for reading). Two keys
// with one id are an error.
func New(current Key, old ...Key) (*Codec, error) {
	c := &Codec{current: current.ID, aeads: map[string]cipher.AEAD{}}
	for _, k := range append([]Key{current}, old...) {
		if msg := CheckKeyID(k.ID); msg != "" {
			return nil, fmt.Errorf("key id %q %s", k.ID, msg)
		}
		if _, dup := c.aeads[k.ID]; dup {
			return nil, fmt.Errorf("key id %s is given twice: give each key its own id", k.ID)
		}
		block, err := aes.NewCipher(k.raw[:])
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", k.ID, err)
		}
		c.aeads[k.ID] = aead
		c.ids = append(c.ids, k.ID)
	}
	return c, nil
}

// KeyID is the id of the key c seals with ("" for the nil Codec).
func (c *Codec) KeyID() string {
	if c == nil {
		return ""
	}
	return c.current
}

// KeyIDs are the ids of the keys c opens with, the current one first.
func (c *Codec) KeyIDs() []string {
	if c == nil {
		return nil
	}
	return slices.Clone(c.ids)
}

// Has reports whether c holds the key id.
func (c *Codec) Has(id string) bool {
	if c == nil {
		return false
	}
	_, ok := c.aeads[id]
	return ok
}

// Seal encrypts plain with c's current key under a fresh random nonce,
// bound to aad (where the payload belongs: Open needs the same aad). A
// payload over MaxPlainBytes is an error.
func (c *Codec) Seal(plain, aad []byte) (string, error) {
	if c == nil {
		return "", fmt.Errorf("seal: no encryption key is configured")
	}
	if len(plain) > MaxPlainBytes {
		return "", fmt.Errorf("seal: payload of %d bytes is over the %d bytes a sealed payload holds", len(plain), MaxPlainBytes)
	}
	aead := c.aeads[c.current]
	head := Prefix + c.current + "."
	buf := make([]byte, nonceBytes, nonceBytes+len(plain)+tagBytes)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("seal: read a random nonce: %w", err)
	}
	buf = aead.Seal(buf, buf[:nonceBytes], plain, additional(head, aad))
	return head + base64.RawURLEncoding.EncodeToString(buf), nil
}

// additional binds the header (format and key id) and the caller's aad.
func additional(head string, aad []byte) []byte {
	return append([]byte(head), aad...)
}

// Open decrypts a payload Seal made with aad. A payload whose key c does
// not hold is a *MissingKeyError; any other that does not open is an
// *Error (its byte offset and why).
func (c *Codec) Open(sealed string, aad []byte) ([]byte, error) {
	id, body, err := Parse(sealed)
	if err != nil {
		return nil, err
	}
	if !c.Has(id) {
		return nil, &MissingKeyError{KeyID: id, Have: c.KeyIDs()}
	}
	at := len(Prefix) + len(id) + 1
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		off := at
		var ce base64.CorruptInputError
		if errors.As(err, &ce) {
			off += int(ce)
		}
		return nil, &Error{Offset: off, Problem: "the ciphertext is not unpadded base64url"}
	}
	if len(raw) < nonceBytes+tagBytes {
		return nil, &Error{Offset: at, Problem: fmt.Sprintf("the ciphertext holds %d bytes, fewer than a nonce and a tag (%d)", len(raw), nonceBytes+tagBytes)}
	}
	plain, err := c.aeads[id].Open(nil, raw[:nonceBytes], raw[nonceBytes:], additional(sealed[:at], aad))
	if err != nil {
		return nil, &Error{Offset: at, Problem: "it does not decrypt with key " + id + " (altered, moved from another place, or sealed with another key of that id)"}
	}
	return plain, nil
}

// Parse splits a sealed payload into its key id and its encoded body,
// checking its size and form, without decrypting it.
func Parse(sealed string) (keyID, body string, err error) {
	if len(sealed) > MaxSealedBytes {
		return "", "", &Error{Offset: MaxSealedBytes, Problem: fmt.Sprintf("the payload is %d bytes long, over the %d a sealed payload can be", len(sealed), MaxSealedBytes)}
	}
	if !strings.HasPrefix(sealed, Prefix) {
		n := 0
		for n < len(sealed) && n < len(Prefix) && sealed[n] == Prefix[n] {
			n++
		}
		return "", "", &Error{Offset: n, Problem: "it does not start with " + Prefix + " (not a sealed payload, or of a newer format)"}
	}
	rest := sealed[len(Prefix):]
	dot := strings.IndexByte(rest, '.')
	if dot < 0 {
		return "", "", &Error{Offset: len(sealed), Problem: "the key id does not end with a dot"}
	}
	id := rest[:dot]
	if CheckKeyID(id) != "" {
		return "", "", &Error{Offset: len(Prefix), Problem: "the key id " + CheckKeyID(id)}
	}
	return id, rest[dot+1:], nil
}

// Error is a sealed payload that does not open: where (a byte offset in
// the payload) and why.
type Error struct {
	Offset  int
	Problem string
}

func (e *Error) Error() string {
	return fmt.Sprintf("sealed payload, byte %d: %s", e.Offset, e.Problem)
}

// MissingKeyError is a sealed payload whose key the Codec does not hold.
type MissingKeyError struct {
	KeyID string
	Have  []string // the ids the Codec holds
}

func (e *MissingKeyError) Error() string {
	if len(e.Have) == 0 {
		return fmt.Sprintf("it was sealed with key %s, and no encryption key is configured", e.KeyID)
	}
	return fmt.Sprintf("it was sealed with key %s, which is not configured (configured: %s)", e.KeyID, strings.Join(e.Have, ", "))
}
