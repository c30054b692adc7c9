package broker

import (
	"math"
	"net"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2/geo"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/numeric"
	"github.com/blevesearch/bleve/v2/search"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker/internal/fanout"
	"github.com/quarrysearch/quarry/internal/indexmap"
)

// Shards sort and send bleve's encoded sort values (api.Hit.SortKeys): a
// number or a date is a prefix-coded integer, which compares correctly
// across shards, so the broker merges by them. Only the hits of the page
// returned are decoded, into typed values (api.Hit.Sort), by what the
// index's mapping says each field holds.

// sortKind is what a field's sort values hold.
type sortKind uint8

const (
	// sortDynamic: a field the mapping does not declare. A prefix-coded
	// value is a number, or a date when read as a number it is absurdly
	// small (see dynamicValue); anything else is text.
	sortDynamic sortKind = iota
	sortText
	sortNumber
	sortDate
	sortBool
	sortGeo
	sortIP
)

// kindOfType maps a bleve field mapping's type to a sortKind.
func kindOfType(typ string) sortKind {
	switch typ {
	case "":
		return sortDynamic
	case "number":
		return sortNumber
	case "datetime":
		return sortDate
	case "boolean":
		return sortBool
	case "geopoint":
		return sortGeo
	case "IP":
		return sortIP
	}
	return sortText
}

// sortTypes knows what the fields of one index definition sort by. A
// field's kind is looked up in the mapping on first use and kept.
type sortTypes struct {
	created time.Time                 // the definition's: an index made again is another
	mapping *mapping.IndexMappingImpl // nil when it does not build: every field dynamic

	mu    sync.RWMutex
	kinds map[string]sortKind
}

// kind says what field's sort values hold; with no types (the index was
// deleted meanwhile), every field is dynamic.
func (t *sortTypes) kind(field string) sortKind {
	if t == nil {
		return sortDynamic
	}
	t.mu.RLock()
	k, ok := t.kinds[field]
	t.mu.RUnlock()
	if ok {
		return k
	}
	if t.mapping != nil {
		k = kindOfType(t.mapping.FieldMappingForPath(field).Type)
	}
	t.mu.Lock()
	t.kinds[field] = k
	t.mu.Unlock()
	return k
}

// sortTypeCache holds the sortTypes of every index sorted on.
type sortTypeCache struct {
	mu      sync.Mutex
	byIndex map[string]*sortTypes
}

// of returns def's sortTypes, building them on first use.
func (c *sortTypeCache) of(def api.IndexDefinition) *sortTypes {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.byIndex[def.Name]; t != nil && t.created.Equal(def.Created) {
		return t
	}
	t := &sortTypes{created: def.Created, kinds: map[string]sortKind{}}
	// Every shard was built with this mapping, so it builds; if it did
	// not, values are still decoded, by their form alone.
	t.mapping, _ = indexmap.Build(def.Mapping)
	if c.byIndex == nil {
		c.byIndex = map[string]*sortTypes{}
	}
	c.byIndex[def.Name] = t
	return t
}

// sortTypesOf returns an index's sortTypes; nil if it was deleted.
func (b *Broker) sortTypesOf(index string) *sortTypes {
	def, ok := b.Index(index)
	if !ok {
		return nil
	}
	return b.sortTypes.of(def)
}

// drop forgets a deleted index.
func (c *sortTypeCache) drop(index string) {
	c.mu.Lock()
	delete(c.byIndex, index)
	c.mu.Unlock()
}

// scoreValue is the sort value of "_score", as bleve gives it (a constant,
// so boxing it costs nothing).
var scoreValue any = "_score"

// decodeSortValues sets each hit's Sort from its SortKeys, for the sort
// keys of the request (sort, as "-price"): one slice for the whole page,
// shared out among the hits.
func decodeSortValues(types *sortTypes, sort []string, hits []api.Hit) {
	if len(hits) == 0 || len(sort) == 0 {
		return
	}
	var buf [8]sortKind
	kinds := buf[:0]
	for _, s := range sort {
		k := sortKind(0)
		if f := fanout.SortField(s); f != "_score" && f != "_id" {
			k = types.kind(f)
		}
		kinds = append(kinds, k)
	}
	n := len(sort)
	values := make([]any, len(hits)*n)
	for i := range hits {
		h := &hits[i]
		row := values[i*n : i*n+n : i*n+n]
		for j, key := range h.SortKeys[:min(n, len(h.SortKeys))] {
			switch fanout.SortField(sort[j]) {
			case "_score":
				row[j] = scoreValue
			case "_id":
				row[j] = h.ID
			default:
				row[j] = sortValue(kinds[j], key)
			}
		}
		h.Sort = row
	}
}

// sortValue decodes one encoded sort value of a field of kind k. A hit
// without a value for the field (bleve sorts it last or first with a
// sentinel) has none: nil.
func sortValue(k sortKind, key string) any {
	if key == search.HighTerm || key == search.LowTerm {
		return nil
	}
	switch k {
	case sortNumber:
		if i, ok := prefixCoded(key); ok {
			return finite(numeric.Int64ToFloat64(i))
		}
	case sortDate:
		if i, ok := prefixCoded(key); ok {
			return date(i)
		}
	case sortBool:
		switch key {
		case "T":
			return true
		case "F":
			return false
		}
	case sortGeo:
		if i, ok := prefixCoded(key); ok {
			return map[string]any{"lat": geo.MortonUnhashLat(uint64(i)), "lon": geo.MortonUnhashLon(uint64(i))}
		}
	case sortIP:
		if len(key) == net.IPv6len {
			return net.IP(key).String()
		}
	case sortDynamic:
		if i, ok := prefixCoded(key); ok {
			return dynamicValue(i)
		}
	}
	return key
}

// dynamicValue is a prefix-coded value of a field the mapping does not
// declare: a number, or a date (bleve's dynamic mapping indexes strings
// that parse as dates as dates). Both are 64-bit integers, a number's the
// bits of its float64, a date's its Unix nanoseconds. A date from 1840 to
// 2100 read as a float64 is below 1e-30 in magnitude (its top bits make a
// tiny exponent), a number no document holds: so such a value is a date.
// Declare the field's type in the mapping to be exact.
func dynamicValue(i int64) any {
	f := numeric.Int64ToFloat64(i)
	if f != 0 && (math.Abs(f) < 1e-30 || math.IsNaN(f) || math.IsInf(f, 0)) {
		return date(i)
	}
	return f
}

// prefixCoded decodes a full-precision (shift 0) prefix-coded integer.
func prefixCoded(key string) (int64, bool) {
	if ok, shift := numeric.ValidPrefixCodedTerm(key); !ok || shift != 0 {
		return 0, false
	}
	i, err := numeric.PrefixCoded(key).Int64()
	return i, err == nil
}

func date(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// finite is f, or nil when JSON cannot hold it.
func finite(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return f
}
