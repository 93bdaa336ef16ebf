package project

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/redact/seal"
)

// maxKeyFileBytes bounds a key file: a key is 32 bytes, as base64 or hex
// well under 100.
const maxKeyFileBytes = 4096

// loadCodec reads the keys of rein.yaml encryption: (cfg may be nil:
// none) with getenv, and returns the payload codec and the text of every
// key read, which the project's Redactor must hide. Without encryption:
// it returns nil, nil. An error is located at the key's entry and says
// what to do; it never holds key material.
func loadCodec(cfg *flow.Config, getenv func(string) string) (*seal.Codec, []string, error) {
	if cfg == nil || cfg.Encryption == nil {
		return nil, nil, nil
	}
	e := cfg.Encryption
	var text []string
	read := func(ks *flow.KeySource) (seal.Key, error) {
		raw, err := readKey(ks, getenv)
		if err != nil {
			return seal.Key{}, fmt.Errorf("%s:%d:%d: encryption: %w", ks.File, ks.Pos.Line, ks.Pos.Col, err)
		}
		if s := strings.TrimSpace(string(raw)); s != "" {
			text = append(text, s)
		}
		k, err := seal.ParseKey(ks.KeyID, raw, ks.Where())
		if err != nil {
			return seal.Key{}, fmt.Errorf("%s:%d:%d: encryption: %w", ks.File, ks.Pos.Line, ks.Pos.Col, err)
		}
		text = append(text, k.Text()...)
		return k, nil
	}
	cur, err := read(&e.KeySource)
	if err != nil {
		return nil, nil, err
	}
	old := make([]seal.Key, 0, len(e.OldKeys))
	for i := range e.OldKeys {
		k, err := read(&e.OldKeys[i])
		if err != nil {
			return nil, nil, err
		}
		old = append(old, k)
	}
	c, err := seal.New(cur, old...)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: encryption: %w", e.File, err)
	}
	return c, text, nil
}

// readKey reads the text of one key from its file or variable.
func readKey(ks *flow.KeySource, getenv func(string) string) ([]byte, error) {
	if ks.KeyEnv != "" {
		v := getenv(ks.KeyEnv)
		if v == "" {
			return nil, fmt.Errorf("key %s: key_env %s is not set: set it to the key (32 bytes as base64 or hex), or name another source", ks.KeyID, ks.KeyEnv)
		}
		return []byte(v), nil
	}
	f, err := os.Open(ks.KeyFile)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("key %s: key_file %s does not exist: restore it, or make a new key (openssl rand -base64 32 > FILE) under a new key_id", ks.KeyID, ks.KeyFile)
		}
		return nil, fmt.Errorf("key %s: %w", ks.KeyID, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("key %s: read key_file %s: %w", ks.KeyID, ks.KeyFile, err)
	}
	if len(raw) > maxKeyFileBytes {
		return nil, fmt.Errorf("key %s: key_file %s is over %d bytes: it must hold one 256-bit key (32 bytes as base64 or hex)", ks.KeyID, ks.KeyFile, maxKeyFileBytes)
	}
	return raw, nil
}
