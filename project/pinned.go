package project

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"maps"
	"slices"
	"sync"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/tool"
)

// DefaultCacheSize is how many parsed pinned flows a Cache of NewCache(0)
// keeps; when full, the oldest entry goes.
const DefaultCacheSize = 256

// Cache keeps the flows LoadPinned parses from a run's pinned text, so that
// resuming or answering a run again does not parse its flow and compile its
// schemas again. A rein.Client keeps one (LoadOptions.Cache); there is no
// process-wide cache. Only the *flow.Flow is cached: immutable once parsed,
// shared by every Project built from it. The tools, models, MCP sessions
// and cassettes of a Project, which hold closers and the program's
// settings, are built anew by each Load.
//
// An entry's key is everything the parse reads that a run pins or a load
// sets: the flow path, the flow text, the pinned files (schemas, prompts),
// TrustedToolsOnly and the rein.yaml defaults. What the parse asks of the
// loading program (is tool X known, its effect and idempotence; is model Y
// configured) is recorded with the entry and asked again of the program on
// a hit: a different answer is a miss, and the flow parses as before. A
// parse that read a file the run did not pin, or failed, is not cached.
// A Cache is safe for concurrent use.
//
// It keeps too each rein.yaml a Load parsed (loadConfig), by path, with the
// contents of every file its parse read: a later Load uses it while each
// of those files reads the same, and parses again otherwise.
type Cache struct {
	mu    sync.Mutex
	size  int
	m     map[[32]byte]*pinnedFlow
	order [][32]byte // insertion order, for eviction
	cfgs  map[string]*parsedConfig
}

// parsedConfig is a rein.yaml as a Load parsed it, and the files its
// parse read with their contents then.
type parsedConfig struct {
	cfg   *flow.Config
	files map[string][]byte
}

// loadConfig is flow.LoadConfig(path) through the cache c (nil: none).
func (c *Cache) loadConfig(path string) (*flow.Config, error) {
	if c == nil {
		return flow.LoadConfig(path)
	}
	c.mu.Lock()
	e := c.cfgs[path]
	c.mu.Unlock()
	if e != nil && e.same() {
		return e.cfg, nil
	}
	cfg, files, err := flow.LoadConfigFiles(path)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfgs == nil {
		c.cfgs = map[string]*parsedConfig{}
	}
	if _, ok := c.cfgs[path]; !ok && len(c.cfgs) >= c.size {
		clear(c.cfgs) // a program that loads more folders than a Cache keeps flows: start over
	}
	c.cfgs[path] = &parsedConfig{cfg: cfg, files: files}
	return cfg, nil
}

// same reports whether every file the parse read reads the same now, and
// every place it found none still holds none.
func (e *parsedConfig) same() bool {
	for path, was := range e.files {
		now, err := flow.ReadConfigFile(path)
		if was == nil {
			if err == nil {
				return false
			}
			continue
		}
		if err != nil || !bytes.Equal(now, was) {
			return false
		}
	}
	return true
}

// NewCache returns a Cache of at most size parsed flows (0:
// DefaultCacheSize).
func NewCache(size int) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &Cache{size: size, m: map[[32]byte]*pinnedFlow{}}
}

type pinnedFlow struct {
	flow   *flow.Flow
	tools  []toolAnswer
	models []modelAnswer
}

// toolAnswer is one tool lookup of a parse and what it read of the answer.
type toolAnswer struct {
	name       string
	ok         bool
	effect     tool.Effect
	idempotent bool
}

type modelAnswer struct {
	name string
	ok   bool
}

// pinnedKey is the cache key of a parse of text at path with files and
// fopts (whose callbacks are not part of it).
func pinnedKey(path string, text []byte, files map[string][]byte, fopts *flow.Options) [32]byte {
	h := sha256.New()
	put := func(b []byte) {
		h.Write(binary.AppendUvarint(nil, uint64(len(b))))
		h.Write(b)
	}
	put([]byte(path))
	put(text)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		put([]byte(name))
		put(files[name])
	}
	var flags []byte
	if fopts.TrustedToolsOnly {
		flags = append(flags, 't')
	}
	if d := fopts.Defaults; d != nil {
		flags = append(flags, 'd')
		if d.Retries != nil {
			flags = binary.AppendVarint(append(flags, 'r'), int64(*d.Retries))
		}
		flags = binary.AppendVarint(flags, int64(d.Timeout))
	}
	put(flags)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// parsePinned parses a run's pinned flow text with fopts, through the
// cache c (nil: none). fopts.ReadFile must serve files from the run's
// pinned files; fromDisk reports, after the parse, whether it read any
// other.
func (c *Cache) parsePinned(text []byte, path string, files map[string][]byte, fopts *flow.Options, fromDisk func() bool) (*flow.Flow, error) {
	if c == nil {
		return flow.Parse(text, path, fopts)
	}
	key := pinnedKey(path, text, files, fopts)
	c.mu.Lock()
	e := c.m[key]
	c.mu.Unlock()
	if e != nil && e.holds(fopts) {
		return e.flow, nil
	}
	rec := &pinnedFlow{}
	o := *fopts
	if fopts.Tools != nil {
		o.Tools = func(name string) (tool.Spec, bool) {
			spec, ok := fopts.Tools(name)
			rec.tools = append(rec.tools, toolAnswer{name, ok, spec.Effect, spec.Idempotent})
			return spec, ok
		}
	}
	if fopts.Models != nil {
		o.Models = func(name string) bool {
			ok := fopts.Models(name)
			rec.models = append(rec.models, modelAnswer{name, ok})
			return ok
		}
	}
	f, err := flow.Parse(text, path, &o)
	if err != nil || fromDisk() {
		return f, err
	}
	rec.flow = f
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok {
		if len(c.order) >= c.size {
			delete(c.m, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, key)
	}
	c.m[key] = rec
	return f, nil
}

// holds reports whether fopts answers every question the entry's parse
// asked as it was answered then. Asking runs fopts' callbacks, as a parse
// would (Load's tool lookup notes the Go tools the flow names).
func (e *pinnedFlow) holds(fopts *flow.Options) bool {
	for _, a := range e.tools {
		if fopts.Tools == nil {
			return false
		}
		spec, ok := fopts.Tools(a.name)
		if ok != a.ok || spec.Effect != a.effect || spec.Idempotent != a.idempotent {
			return false
		}
	}
	for _, a := range e.models {
		if fopts.Models == nil || fopts.Models(a.name) != a.ok {
			return false
		}
	}
	return true
}
