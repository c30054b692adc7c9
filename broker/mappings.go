package broker

import (
	"bytes"
	"sync"

	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/indexmap"
)

// mappingCache keeps each index's bleve mapping, built from its
// definition on first use: the broker lists a query's terms with it
// (run.composeStats). An entry is used while the definition's mapping is
// the one it was built from.
type mappingCache struct {
	mu sync.Mutex
	m  map[string]*builtMapping
}

type builtMapping struct {
	raw []byte
	m   mapping.IndexMapping // nil: the mapping does not build (the shards say why)
}

// get returns def's mapping, nil when it does not build.
func (c *mappingCache) get(def *api.IndexDefinition) mapping.IndexMapping {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[def.Name]; e != nil && bytes.Equal(e.raw, def.Mapping) {
		return e.m
	}
	e := &builtMapping{raw: bytes.Clone(def.Mapping)}
	if m, err := indexmap.Build(def.Mapping); err == nil {
		e.m = m
	}
	if c.m == nil {
		c.m = map[string]*builtMapping{}
	}
	c.m[def.Name] = e
	return e.m
}

// drop forgets a deleted index's mapping.
func (c *mappingCache) drop(index string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, index)
}
