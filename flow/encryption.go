package flow

import (
	"path/filepath"

	"github.com/goccy/go-yaml/ast"

	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/redact/seal"
)

// EncryptionDecl is rein.yaml encryption:, the key that seals at rest the
// payloads of a run that hold a secret (package redact/seal), e.g.
//
//	encryption:
//	  key_id: k2
//	  key_file: keys/k2.key        # or key_env: REIN_ENCRYPTION_KEY
//	  old_keys:
//	    - {key_id: k1, key_file: keys/k1.key}
//
// The key itself is never written in rein.yaml: KeyFile (resolved against
// the folder of rein.yaml) or KeyEnv names where it is.
type EncryptionDecl struct {
	KeySource
	// OldKeys are keys rotated out, kept to open what they sealed.
	OldKeys []KeySource
}

// KeySource is one key: its id and where it is read from (exactly one of
// KeyFile and KeyEnv).
type KeySource struct {
	KeyID   string
	KeyFile string
	KeyEnv  string
	File    string // the rein.yaml
	Pos     Pos
}

// Where says where the key is read from, for messages: "key_file
// keys/k2.key" or "key_env REIN_KEY".
func (k *KeySource) Where() string {
	if k.KeyFile != "" {
		return "key_file " + k.KeyFile
	}
	return "key_env " + k.KeyEnv
}

var keyFields = []string{"key_id", "key_file", "key_env"}

func (d *decoder) decodeEncryption(fl field, dir string) *EncryptionDecl {
	fields, ok := fieldsOf(fl.value)
	if !ok {
		d.diags.add(posOf(fl.value), "", "encryption must be a mapping like {key_id: k1, key_file: rein.key}, not %s", yamlnode.Kind(fl.value))
		return nil
	}
	e := &EncryptionDecl{}
	var keyOnly []field
	for _, f := range fields {
		if f.key != "old_keys" {
			keyOnly = append(keyOnly, f)
			continue
		}
		seq, ok := f.value.(*ast.SequenceNode)
		if !ok {
			if !isNull(f.value) {
				d.diags.add(posOf(f.value), "", "encryption: old_keys must be a list of {key_id, key_file or key_env}, not %s", yamlnode.Kind(f.value))
			}
			continue
		}
		for _, item := range seq.Values {
			ks, ok := fieldsOf(item)
			if !ok {
				d.diags.add(posOf(item), "", "encryption: each of old_keys must be a mapping like {key_id: k1, key_file: k1.key}, not %s", yamlnode.Kind(item))
				continue
			}
			e.OldKeys = append(e.OldKeys, d.keySource(ks, posOf(item), dir, "encryption: old_keys entry", keyFields))
		}
	}
	e.KeySource = d.keySource(keyOnly, posOf(fl.value), dir, "encryption", append(keyFields, "old_keys"))
	seen := map[string]bool{}
	for _, k := range append([]KeySource{e.KeySource}, e.OldKeys...) {
		if k.KeyID == "" {
			continue
		}
		if seen[k.KeyID] {
			d.diags.add(k.Pos, "", "encryption: key id %s is given twice: give each key its own id", k.KeyID)
		}
		seen[k.KeyID] = true
	}
	return e
}

// keySource reads {key_id, key_file | key_env}; where names it in messages.
func (d *decoder) keySource(fields []field, at Pos, dir, where string, known []string) KeySource {
	k := KeySource{File: d.diags.file, Pos: at}
	for _, f := range fields {
		switch f.key {
		case "key_id":
			if v, ok := d.str(f, ""); ok {
				if msg := seal.CheckKeyID(v); msg != "" {
					d.diags.add(posOf(f.value), "", "%s: key_id %q %s", where, v, msg)
				}
				k.KeyID = v
			}
		case "key_file":
			if v, ok := d.str(f, ""); ok {
				if v == "" {
					d.diags.add(posOf(f.value), "", "%s: key_file is empty: name the file that holds the key", where)
				} else if !filepath.IsAbs(v) {
					v = filepath.Join(dir, v)
				}
				k.KeyFile = v
			}
		case "key_env":
			if v, ok := d.str(f, ""); ok {
				if !envName.MatchString(v) || v[len(v)-1] == '*' {
					// not quoted: it may be the key itself, pasted by mistake.
					d.diags.add(posOf(f.value), "", "%s: key_env is not an environment variable name (letters, digits and _, not starting with a digit): name the variable that holds the key, never write the key itself in rein.yaml", where)
				}
				k.KeyEnv = v
			}
		default:
			d.unknownField(f, "", where, known)
		}
	}
	switch {
	case k.KeyID == "":
		d.diags.add(at, "", "%s needs a key_id: (a name for the key, like k1; each sealed payload records it, so the key can be rotated)", where)
	case k.KeyFile == "" && k.KeyEnv == "":
		d.diags.add(at, "", "%s: key %s needs key_file: (a file holding the key) or key_env: (a variable holding it)", where, k.KeyID)
	case k.KeyFile != "" && k.KeyEnv != "":
		d.diags.add(at, "", "%s: key %s has both key_file and key_env: give one", where, k.KeyID)
	}
	return k
}
