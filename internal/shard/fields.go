package shard

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/geo"
	"github.com/blevesearch/bleve/v2/numeric"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/quarrysearch/quarry/api/jsonenc"
)

// loadFields loads the stored values of hits' fields ("*": every stored
// field), exactly as bleve's own loading (LoadAndHighlightFields) gives
// them, for less. They come back as JSON, no map made: raws[i] is hit
// i's fields as encoding/json would write the map bleve makes (nil: none
// loaded here; then the hit's Fields, if any, are bleve's). bleve runs a
// search per hit's document (Document), builds every stored field of it
// as a document.Field, copying each value, then walks the document's
// fields once per asked field. Here the
// hits' documents are found segment by segment in the index's current
// snapshot, in index order, without a goroutine per segment, and each
// document's stored fields are visited once, decoding only the asked
// ones. A hit deleted since has no fields. A document whose asked fields
// include a date, an IP address or a geo shape (whose values bleve
// formats in its own ways) is loaded by bleve. (bleve's online mapping
// updates, which can hide a stored field, are not used by Quarry: a
// mapping changes with a new index.) BenchmarkLoadFields measures both.
func loadFields(ctx context.Context, idx bleve.Index, hits []*search.DocumentMatch, fields []string, budget *replyBudget) ([]json.RawMessage, error) {
	if len(hits) == 0 || len(fields) == 0 {
		return nil, nil
	}
	snap, closeSnap, err := openSnapshot(idx)
	if err != nil {
		return nil, err
	}
	defer closeSnap()
	if budget == nil {
		budget = &replyBudget{}
	}
	if snap == nil {
		if err := bleveFields(ctx, idx, hits, fields); err != nil {
			return nil, err
		}
		return nil, budget.takeFields(hits)
	}
	all := slices.Contains(fields, "*")
	var doc docJSON
	at := make([][2]int, len(hits)) // each hit's JSON in doc.out, [start, end) (empty: none)
	found := 0
	// First from the columns (columns.go), for the hits whose segments
	// have them; the rest from their stored documents.
	var served []bool
	if cols := columnsOf(idx); cols != nil && cols.want(fields) {
		served = make([]bool, len(hits))
		if found, err = cols.load(snap, hits, sortedFields(fields), &doc, at, served, budget); err != nil {
			return nil, err
		}
	}
	byID := make(map[string]int, len(hits)-found)
	ids := make([]string, 0, len(hits)-found)
	for i, h := range hits {
		if served == nil || !served[i] {
			byID[h.ID] = i
			ids = append(ids, h.ID)
		}
	}
	var bleveLoads []*search.DocumentMatch // hits bleve loads
	cp := checkpointOf(ctx)
	// One visitor for every document, its state reset before each: a
	// closure made per document, capturing its own hit and odd, cost three
	// allocations a hit.
	hit := -1    // the document's hit; -1: not a hit
	odd := false // it has a field bleve formats its own way
	visit := func(name string, typ byte, val []byte, _ []uint64) bool {
		if name == "_id" { // the first stored field
			i, ok := byID[string(val)]
			if !ok {
				return false
			}
			hit = i
			return true
		}
		if !all && !slices.Contains(fields, name) {
			return true
		}
		if !doc.add(name, typ, val) {
			odd = odd || typ == 'd' || typ == 'i' || typ == 's'
			return !odd
		}
		return budget.take(len(name) + len(val))
	}
	// Segment by segment (a live document is in one), each one's
	// documents in order, until every hit is found.
	for _, seg := range snap.Segments() {
		if found == len(hits) {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		nums, err := seg.DocNumbers(ids)
		if err != nil {
			return nil, err
		}
		for it := nums.Iterator(); it.HasNext(); {
			hit, odd = -1, false
			doc.reset()
			err := seg.VisitDocument(uint64(it.Next()), visit)
			if err != nil {
				return nil, err
			}
			if budget.over() {
				return nil, errReplyTooLarge
			}
			if hit < 0 {
				continue
			}
			found++
			if cp != nil && found%CheckpointEvery == 0 {
				if err := cp(ctx); err != nil {
					return nil, err
				}
			}
			if odd {
				hits[hit].Fields = nil
				bleveLoads = append(bleveLoads, hits[hit])
				continue
			}
			at[hit][0] = len(doc.out)
			doc.finish()
			at[hit][1] = len(doc.out)
		}
	}
	if len(bleveLoads) > 0 {
		if err := bleveFields(ctx, idx, bleveLoads, fields); err != nil {
			return nil, err
		}
		if err := budget.takeFields(bleveLoads); err != nil {
			return nil, err
		}
	}
	raws := make([]json.RawMessage, len(hits))
	for i, a := range at {
		if a[1] > a[0] {
			raws[i] = doc.out[a[0]:a[1]:a[1]]
		}
	}
	return raws, nil
}

// docJSON writes the stored fields of one document after another as
// JSON objects into out, each as encoding/json would write the map
// bleve's loading makes (search.DocumentMatch.AddFieldValue): keys
// sorted, a field stored more than once as an array of its values in
// order. A document's values are written into vals as they are visited
// (visited bytes are not kept past the visit), then put in order.
type docJSON struct {
	out   []byte  // the objects of the documents finished
	vals  []byte  // the current document's values, each as JSON
	spans []field // the current document's fields, in visit order
}

type field struct {
	name       string
	start, end int // its value in vals
}

func (d *docJSON) reset() { d.vals, d.spans = d.vals[:0], d.spans[:0] }

// add writes one stored value (appendStored); false for a kind bleve
// formats its own way, and for a value that does not decode.
func (d *docJSON) add(name string, typ byte, val []byte) bool {
	start := len(d.vals)
	var ok bool
	if d.vals, ok = appendStored(d.vals, typ, val); !ok {
		d.vals = d.vals[:start]
		return false
	}
	d.spans = append(d.spans, field{name: name, start: start, end: len(d.vals)})
	return true
}

// finish appends the current document's object to out (nothing when it
// has no fields).
func (d *docJSON) finish() {
	if len(d.spans) == 0 {
		return
	}
	slices.SortStableFunc(d.spans, func(a, b field) int { return strings.Compare(a.name, b.name) })
	d.out = append(d.out, '{')
	for i := 0; i < len(d.spans); {
		j := i + 1
		for j < len(d.spans) && d.spans[j].name == d.spans[i].name {
			j++
		}
		if i > 0 {
			d.out = append(d.out, ',')
		}
		d.out = append(jsonenc.AppendString(d.out, d.spans[i].name), ':')
		if j-i > 1 {
			d.out = append(d.out, '[')
		}
		for k := i; k < j; k++ {
			if k > i {
				d.out = append(d.out, ',')
			}
			d.out = append(d.out, d.vals[d.spans[k].start:d.spans[k].end]...)
		}
		if j-i > 1 {
			d.out = append(d.out, ']')
		}
		i = j
	}
	d.out = append(d.out, '}')
}

// takeFields counts the fields bleve loaded for hits, and stops with
// errReplyTooLarge at the first that goes over the bound.
func (b *replyBudget) takeFields(hits []*search.DocumentMatch) error {
	for _, h := range hits {
		for name, v := range h.Fields {
			if !b.take(len(name) + valueBytes(v)) {
				return errReplyTooLarge
			}
		}
	}
	return nil
}

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

// appendStored appends a stored field's value as JSON, decoded as
// bleve's loading does, for the kinds whose value it gives as is: text, a
// number, a boolean, a geo point ([lon, lat]). ok is false for the
// others, and for a value that does not decode (bleve leaves it out too)
// or that JSON cannot hold. Nothing is boxed on the way.
func appendStored(b []byte, typ byte, val []byte) (_ []byte, ok bool) {
	var err error
	switch typ {
	case 't':
		return jsonenc.AppendString(b, val), true
	case 'n':
		i, perr := numeric.PrefixCoded(val).Int64()
		if perr != nil {
			return b, false
		}
		b, err = jsonenc.AppendFloat(b, numeric.Int64ToFloat64(i))
		return b, err == nil
	case 'b':
		if len(val) != 1 {
			return b, false
		}
		return strconv.AppendBool(b, val[0] == 'T'), true
	case 'g':
		i, perr := numeric.PrefixCoded(val).Int64()
		if perr != nil {
			return b, false
		}
		if b, err = jsonenc.AppendFloat(append(b, '['), geo.MortonUnhashLon(uint64(i))); err != nil {
			return b, false
		}
		b, err = jsonenc.AppendFloat(append(b, ','), geo.MortonUnhashLat(uint64(i)))
		return append(b, ']'), err == nil
	}
	return b, false
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

// sortedFields returns fields sorted, without duplicates (a copy).
func sortedFields(fields []string) []string {
	out := slices.Clone(fields)
	slices.Sort(out)
	return slices.Compact(out)
}
