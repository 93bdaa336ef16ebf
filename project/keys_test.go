package project_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/project"
)

func writeFolder(t *testing.T, reinYAML string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	flowText := "name: k\nsteps:\n  - {id: a, type: approval}\n"
	all := map[string]string{"flow.yaml": flowText, "rein.yaml": reinYAML}
	for k, v := range files {
		all[k] = v
	}
	for name, text := range all {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestEncryptionKeysLoad(t *testing.T) {
	t.Parallel()
	cur := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32))
	old := hex.EncodeToString(bytes.Repeat([]byte{4}, 32))
	dir := writeFolder(t, "encryption:\n  key_id: k2\n  key_file: k2.key\n  old_keys: [{key_id: k1, key_env: OLD_REIN_SEAL}]\n",
		map[string]string{"k2.key": cur + "\n"})
	env := map[string]string{"OLD_REIN_SEAL": old}
	p, err := project.Load(dir, &project.LoadOptions{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := p.Codec()
	if c == nil || c.KeyID() != "k2" || !c.Has("k1") {
		t.Fatalf("codec = %v", c)
	}
	// the key text, whatever its form, is one of the project's secrets.
	for _, text := range []string{cur, old} {
		if got := p.Redactor().String("the key is " + text); strings.Contains(got, text) {
			t.Errorf("the project's Redactor does not hide a key: %s", got)
		}
	}
	if len(p.AtRestWarnings()) != 0 {
		t.Errorf("warnings with a key: %v", p.AtRestWarnings())
	}
}

func TestEncryptionKeyErrors(t *testing.T) {
	t.Parallel()
	secretish := "not-a-key-but-secret-text"
	for name, c := range map[string]struct {
		yaml  string
		files map[string]string
		want  []string
	}{
		"missing file": {"encryption: {key_id: k1, key_file: gone.key}\n", nil,
			[]string{"rein.yaml:1:13: encryption: key k1: key_file ", "gone.key does not exist: restore it"}},
		"unset variable": {"encryption: {key_id: k1, key_env: UNSET_REIN_SEAL}\n", nil,
			[]string{"rein.yaml:1:13: encryption: key k1: key_env UNSET_REIN_SEAL is not set"}},
		"not a key": {"encryption: {key_id: k1, key_file: bad.key}\n", map[string]string{"bad.key": secretish},
			[]string{"encryption: key k1: key_file ", "does not hold a 256-bit key", "openssl rand -base64 32"}},
	} {
		dir := writeFolder(t, c.yaml, c.files)
		_, err := project.Load(dir, &project.LoadOptions{Getenv: func(string) string { return "" }})
		if err == nil {
			t.Errorf("%s: loaded", name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q not in: %v", name, w, err)
			}
		}
		if strings.Contains(err.Error(), secretish) {
			t.Errorf("%s: the error quotes the key file: %v", name, err)
		}
	}
}
