package shard

import (
	"context"
	"slices"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/geo"
	"github.com/blevesearch/bleve/v2/numeric"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
)

// loadFields gives hits the stored values of fields ("*": every stored
// field), exactly as bleve's own loading (LoadAndHighlightFields) gives
// them, for less: bleve runs a search per hit's document (Document),
// builds every stored field of it as a document.Field, copying each
// value, then walks the document's fields once per asked field. Here the
// hits' documents are found segment by segment in the index's current
// snapshot, in index order, without a goroutine per segment, and each
// document's stored fields are visited once, decoding only the asked
// ones. A hit deleted since has no fields. A document whose asked fields
// include a date, an IP address or a geo shape (whose values bleve
// formats in its own ways) is loaded by bleve. (bleve's online mapping
// updates, which can hide a stored field, are not used by Quarry: a
// mapping changes with a new index.) BenchmarkLoadFields measures both.
func loadFields(ctx context.Context, idx bleve.Index, hits []*search.DocumentMatch, fields []string, maxBytes int) error {
	if len(hits) == 0 || len(fields) == 0 {
		return nil
	}
	snap, closeSnap, err := openSnapshot(idx)
	if err != nil {
		return err
	}
	defer closeSnap()
	if snap == nil {
		return bleveFields(ctx, idx, hits, fields)
	}
	all := slices.Contains(fields, "*")
	byID := make(map[string]*search.DocumentMatch, len(hits))
	ids := make([]string, len(hits))
	for i, h := range hits {
		byID[h.ID], ids[i] = h, h.ID
	}
	var bleveLoads []*search.DocumentMatch // hits bleve loads
	found := 0
	cp := checkpointOf(ctx)
	budget := fieldBudget{max: maxBytes}
	// One visitor for every document, its state reset before each: a
	// closure made per document, capturing its own h and odd, cost three
	// allocations a hit.
	var h *search.DocumentMatch // the document's hit; nil: not a hit
	odd := false                // it has a field bleve formats its own way
	visit := func(name string, typ byte, val []byte, _ []uint64) bool {
		if name == "_id" { // the first stored field
			h = byID[string(val)]
			return h != nil
		}
		if !all && !slices.Contains(fields, name) {
			return true
		}
		v, ok := storedValue(typ, val)
		if !ok {
			odd = odd || typ == 'd' || typ == 'i' || typ == 's'
			return !odd
		}
		if !budget.take(len(name) + len(val)) {
			return false
		}
		h.AddFieldValue(name, v)
		return true
	}
	// Segment by segment (a live document is in one), each one's
	// documents in order, until every hit is found.
	for _, seg := range snap.Segments() {
		if found == len(hits) {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		nums, err := seg.DocNumbers(ids)
		if err != nil {
			return err
		}
		for it := nums.Iterator(); it.HasNext(); {
			h, odd = nil, false
			err := seg.VisitDocument(uint64(it.Next()), visit)
			if err != nil {
				return err
			}
			if budget.over() {
				return errFieldsTooLarge
			}
			if h == nil {
				continue
			}
			found++
			if cp != nil && found%CheckpointEvery == 0 {
				if err := cp(ctx); err != nil {
					return err
				}
			}
			if odd {
				h.Fields = nil
				bleveLoads = append(bleveLoads, h)
			}
		}
	}
	if len(bleveLoads) > 0 {
		if err := bleveFields(ctx, idx, bleveLoads, fields); err != nil {
			return err
		}
		for _, h := range bleveLoads {
			for name, v := range h.Fields {
				if !budget.take(len(name) + valueBytes(v)) {
					return errFieldsTooLarge
				}
			}
		}
	}
	return nil
}

// fieldBudget counts the bytes of stored fields loaded for one search
// against its bound (wire.ShardRequest.MaxFieldBytes).
type fieldBudget struct {
	max, used int // max 0: no bound
}

// take counts n bytes more, and reports whether they are within the
// bound.
func (b *fieldBudget) take(n int) bool {
	b.used += n
	return !b.over()
}

func (b *fieldBudget) over() bool { return b.max > 0 && b.used > b.max }

// valueBytes is about what a field value bleve loaded takes in a reply:
// its text, or 8 bytes a number.
func valueBytes(v any) int {
	switch v := v.(type) {
	case string:
		return len(v)
	case []any:
		n := 0
		for _, e := range v {
			n += valueBytes(e)
		}
		return n
	}
	return 8
}

// storedValue decodes a stored field's value as bleve's loading does, for
// the kinds whose value it gives as is: text, a number, a boolean, a geo
// point. ok is false for the others, and for a value that does not
// decode (bleve leaves it out too).
func storedValue(typ byte, val []byte) (v any, ok bool) {
	switch typ {
	case 't':
		return string(val), true
	case 'n':
		i, err := numeric.PrefixCoded(val).Int64()
		if err != nil {
			return nil, false
		}
		return numeric.Int64ToFloat64(i), true
	case 'b':
		if len(val) != 1 {
			return nil, false
		}
		return val[0] == 'T', true
	case 'g':
		i, err := numeric.PrefixCoded(val).Int64()
		if err != nil {
			return nil, false
		}
		return []float64{geo.MortonUnhashLon(uint64(i)), geo.MortonUnhashLat(uint64(i))}, true
	}
	return nil, false
}

// bleveFields loads fields of hits the way bleve does, by a search for
// their ids.
func bleveFields(ctx context.Context, idx bleve.Index, hits []*search.DocumentMatch, fields []string) error {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	fr := bleve.NewSearchRequestOptions(query.NewDocIDQuery(ids), len(ids), 0, false)
	fr.Fields = fields
	fres, err := idx.SearchInContext(ctx, fr)
	if err != nil {
		return err
	}
	byID := make(map[string]map[string]any, len(fres.Hits))
	for _, h := range fres.Hits {
		byID[h.ID] = h.Fields
	}
	for _, h := range hits {
		h.Fields = byID[h.ID]
	}
	return nil
}
