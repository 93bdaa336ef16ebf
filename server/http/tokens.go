package http

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/fault"
)

// Scopes a token may hold. Admin holds every scope; run and approve hold
// read too (whoever starts or decides a run reads it).
const (
	ScopeRead    = "read"
	ScopeRun     = "run"
	ScopeApprove = "approve"
	ScopeAdmin   = "admin"
)

// Scopes are the scopes a token may be given, in order.
var Scopes = []string{ScopeRead, ScopeRun, ScopeApprove, ScopeAdmin}

// Token is a stored token: everything but the token itself, of which only
// its sha256 is kept.
type Token struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Tenant    string    `json:"tenant"`
	Scopes    []string  `json:"scopes"`
	Hash      string    `json:"sha256"`
	CreatedAt time.Time `json:"created_at"`
}

// Has reports whether t grants scope.
func (t *Token) Has(scope string) bool {
	if slices.Contains(t.Scopes, ScopeAdmin) || slices.Contains(t.Scopes, scope) {
		return true
	}
	return scope == ScopeRead && (slices.Contains(t.Scopes, ScopeRun) || slices.Contains(t.Scopes, ScopeApprove))
}

// Tokens is the file of a server's tokens (JSON, mode 0600): created by
// Create, listed by List, revoked by Revoke, checked by Lookup. Lookup
// reads the file again when it changed, so a token revoked by another
// process stops working at its next request. Safe for concurrent use.
type Tokens struct {
	path string

	mu    sync.Mutex
	mod   time.Time
	size  int64
	cache []*Token
}

// OpenTokens returns the tokens of the file at path; the file need not
// exist yet (no tokens).
func OpenTokens(path string) *Tokens { return &Tokens{path: path} }

// Path is the file's path.
func (ts *Tokens) Path() string { return ts.path }

type tokenFile struct {
	Tokens []*Token `json:"tokens"`
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// List returns the stored tokens, oldest first.
func (ts *Tokens) List() ([]*Token, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.load()
}

// load reads the file when it changed since it was last read; ts.mu held.
func (ts *Tokens) load() ([]*Token, error) {
	fi, err := os.Stat(ts.path)
	if errors.Is(err, os.ErrNotExist) {
		ts.cache, ts.mod, ts.size = nil, time.Time{}, 0
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tokens %s: %w", ts.path, err)
	}
	if ts.cache != nil && fi.ModTime().Equal(ts.mod) && fi.Size() == ts.size {
		return ts.cache, nil
	}
	b, err := os.ReadFile(ts.path)
	if err != nil {
		return nil, fmt.Errorf("tokens %s: %w", ts.path, err)
	}
	var f tokenFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("tokens %s: not a tokens file (%w): restore it or remove it and create the tokens again", ts.path, err)
	}
	ts.cache, ts.mod, ts.size = f.Tokens, fi.ModTime(), fi.Size()
	if ts.cache == nil {
		ts.cache = []*Token{}
	}
	return ts.cache, nil
}

// save writes tokens to the file, atomically (a temporary file renamed);
// ts.mu held.
func (ts *Tokens) save(tokens []*Token) error {
	b, err := json.MarshalIndent(tokenFile{Tokens: tokens}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(ts.path), 0o700); err != nil {
		return fmt.Errorf("tokens %s: %w", ts.path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(ts.path), ".tokens-*")
	if err != nil {
		return fmt.Errorf("tokens %s: %w", ts.path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("tokens %s: %w", ts.path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("tokens %s: %w", ts.path, err)
	}
	if err := os.Rename(tmp.Name(), ts.path); err != nil {
		return fmt.Errorf("tokens %s: %w", ts.path, err)
	}
	ts.cache = nil // read back at the next load
	return nil
}

// Create makes a token named name for tenant with scopes, stores its hash
// and returns it: the only time the token is seen. A name already given
// to a token is a conflict.
func (ts *Tokens) Create(name, tenant string, scopes []string, now time.Time) (secret string, t *Token, err error) {
	if !namePattern.MatchString(name) {
		return "", nil, fault.Errorf(fault.Business, "token name %q: use 1 to 64 letters, digits, '.', '_', '@' or '-'", name)
	}
	if !namePattern.MatchString(tenant) {
		return "", nil, fault.Errorf(fault.Business, "tenant %q: use 1 to 64 letters, digits, '.', '_', '@' or '-'", tenant)
	}
	if len(scopes) == 0 {
		return "", nil, fault.Errorf(fault.Business, "a token needs at least one scope: %s", strings.Join(Scopes, ", "))
	}
	for _, s := range scopes {
		if !slices.Contains(Scopes, s) {
			return "", nil, fault.Errorf(fault.Business, "scope %q is none of %s", s, strings.Join(Scopes, ", "))
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	all, err := ts.load()
	if err != nil {
		return "", nil, err
	}
	if slices.ContainsFunc(all, func(t *Token) bool { return t.Name == name }) {
		return "", nil, fault.Errorf(fault.Conflict, "a token named %s exists: revoke it first, or choose another name", name)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", nil, err
	}
	secret = "rein_" + base64.RawURLEncoding.EncodeToString(raw[:])
	hash := hashToken(secret)
	t = &Token{ID: hash[:12], Name: name, Tenant: tenant, Scopes: slices.Clone(scopes), Hash: hash, CreatedAt: now.UTC().Truncate(time.Second)}
	if err := ts.save(append(slices.Clone(all), t)); err != nil {
		return "", nil, err
	}
	return secret, t, nil
}

// Revoke removes the token of that name or id; none is not_found.
func (ts *Tokens) Revoke(nameOrID string) (*Token, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	all, err := ts.load()
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(all, func(t *Token) bool { return t.Name == nameOrID || t.ID == nameOrID })
	if i < 0 {
		return nil, fault.Errorf(fault.NotFound, "no token named %s in %s (rein serve token list)", nameOrID, ts.path)
	}
	t := all[i]
	if err := ts.save(slices.Delete(slices.Clone(all), i, i+1)); err != nil {
		return nil, err
	}
	return t, nil
}

// Lookup returns the stored token secret is, or nil. It compares hashes
// in constant time.
func (ts *Tokens) Lookup(secret string) (*Token, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	all, err := ts.load()
	if err != nil {
		return nil, err
	}
	h := []byte(hashToken(secret))
	var found *Token
	for _, t := range all {
		if subtle.ConstantTimeCompare(h, []byte(t.Hash)) == 1 {
			found = t
		}
	}
	return found, nil
}

func hashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
