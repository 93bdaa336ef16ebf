// Package schemacache holds request schemas prepared for a provider's API
// (rewritten for strict mode, wrapped as a tool's input), so that a flow's
// schema is prepared once rather than on every call.
package schemacache

import (
	"encoding/json"
	"sync"
	"sync/atomic"
)

// Max bounds the schemas a Cache holds. Flows hold few distinct schemas;
// past the bound, schemas are prepared on every call.
const Max = 512

// Cache maps a schema's text to what it was prepared into. The zero value
// is an empty cache; a Cache is safe for concurrent use and must not be
// copied after first use.
type Cache[T any] struct {
	m sync.Map // string(schema) → *T
	n atomic.Int32
}

// Get returns raw prepared: from the cache when raw was seen before, else
// from prepare, kept when it is not nil and the cache holds fewer than Max
// schemas. prepare's error, or its nil (nothing to send), is returned as is
// and not kept.
func (c *Cache[T]) Get(raw json.RawMessage, prepare func(json.RawMessage) (*T, error)) (*T, error) {
	if v, ok := c.m.Load(string(raw)); ok {
		return v.(*T), nil
	}
	p, err := prepare(raw)
	if err != nil || p == nil {
		return nil, err
	}
	if c.n.Add(1) <= Max {
		c.m.Store(string(raw), p)
	}
	return p, nil
}
