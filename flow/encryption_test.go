package flow_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
)

func TestConfigEncryption(t *testing.T) {
	t.Parallel()
	cfg, err := flow.ParseConfig([]byte(`encryption:
  key_id: k2
  key_file: keys/k2.key
  old_keys:
    - {key_id: k1, key_env: REIN_OLD_KEY}
`), "/etc/rein/rein.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.Encryption
	if e == nil || e.KeyID != "k2" || e.KeyFile != filepath.FromSlash("/etc/rein/keys/k2.key") || len(e.OldKeys) != 1 ||
		e.OldKeys[0].KeyID != "k1" || e.OldKeys[0].KeyEnv != "REIN_OLD_KEY" || e.OldKeys[0].Where() != "key_env REIN_OLD_KEY" {
		t.Fatalf("encryption = %+v", e)
	}
}

func TestConfigEncryptionRejectsBadEntries(t *testing.T) {
	t.Parallel()
	_, err := flow.ParseConfig([]byte(`encryption:
  key_id: "k 2"
  key_fille: k.key
  old_keys:
    - {key_id: k1, key_file: a.key, key_env: A_KEY}
    - {key_file: b.key}
    - {key_id: k1, key_env: "sk-live-0123456789"}
`), "rein.yaml")
	if err == nil {
		t.Fatal("bad encryption: accepted")
	}
	for _, want := range []string{
		`rein.yaml:2:11: encryption: key_id "k 2" must be 1 to 64 letters`,
		`rein.yaml:3:3: unknown field "key_fille" in encryption (did you mean "key_file"?)`,
		`encryption: key k 2 needs key_file: (a file holding the key) or key_env:`,
		`rein.yaml:5:7: encryption: old_keys entry: key k1 has both key_file and key_env: give one`,
		`rein.yaml:6:7: encryption: old_keys entry needs a key_id:`,
		`rein.yaml:7:29: encryption: old_keys entry: key_env is not an environment variable name`,
		`rein.yaml:7:7: encryption: key id k1 is given twice`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "sk-live") {
		t.Errorf("the error quotes what may be a key:\n%v", err)
	}
	if _, err := flow.ParseConfig([]byte("encryptoin: {key_id: k1, key_env: K}\n"), "rein.yaml"); err == nil || !strings.Contains(err.Error(), `did you mean "encryption"?`) {
		t.Errorf("a misspelt encryption: %v", err)
	}
}
