package temporal

import (
	"fmt"
	"sort"

	"github.com/reinhq/rein/redact/seal"
)

// Keys is the payload codec of the flows' rein.yaml encryption: (nil when
// none names one), which a worker serving them seals every payload with.
// A worker seals with one key: flows whose rein.yaml name different
// current keys are an error.
func (fs *Flows) Keys() (*seal.Codec, error) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	var keys *seal.Codec
	var from string
	for _, e := range fs.sorted() {
		c := e.p.Codec()
		if c == nil {
			continue
		}
		if keys != nil && c.KeyID() != keys.KeyID() {
			return nil, fmt.Errorf("temporal: flow %s's rein.yaml seals with key %s and flow %s's with key %s: a worker seals every payload with one key: give its folders one encryption: key_id (the others under old_keys)", from, keys.KeyID(), e.p.Flow.Name, c.KeyID())
		}
		if keys == nil {
			keys, from = c, e.p.Flow.Name
		}
	}
	return keys, nil
}

// Secretive are the names of the flows whose rein.yaml declares secrets:
// (sorted, once each).
func (fs *Flows) Secretive() []string {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	var out []string
	for _, e := range fs.sorted() {
		if c := e.p.Config(); c != nil && len(c.Secrets) > 0 && (len(out) == 0 || out[len(out)-1] != e.p.Flow.Name) {
			out = append(out, e.p.Flow.Name)
		}
	}
	return out
}

// sorted are the entries by flow name, then hash; fs.mu is held.
func (fs *Flows) sorted() []*entry {
	hs := make([]string, 0, len(fs.byKey))
	for h := range fs.byKey {
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool {
		a, b := fs.byKey[hs[i]].p.Flow.Name, fs.byKey[hs[j]].p.Flow.Name
		return a < b || a == b && hs[i] < hs[j]
	})
	out := make([]*entry, len(hs))
	for i, h := range hs {
		out[i] = fs.byKey[h]
	}
	return out
}
