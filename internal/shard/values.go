package shard

import (
	"context"
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/geo"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/numeric"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/wire"
)

// valueKind says how a field's doc values turn back into the value bleve
// loads from the stored document (LoadAndHighlightFields), or that they
// cannot.
type valueKind uint8

const (
	storedOnly    valueKind = iota // no doc values, or they do not give the stored value back
	numberValue                    // prefix-coded int64 terms; the shift-0 one is the float64's bits
	geoPointValue                  // like a number: the shift-0 term is the point's Morton hash
	boolValue                      // "T" or "F"
	keywordValue                   // the whole text, one term (the keyword analyzer)
)

// valueKinds caches, per field, the valueKind of a mapping: a replica's
// mapping does not change (a new mapping is a new index).
type valueKinds struct {
	m     sync.Map // field name → valueKind
	index *mapping.IndexMappingImpl
}

// of returns field's valueKind. A field is read from doc values only when
// its mapping stores it, indexes it and keeps doc values, so the two ways
// return the same thing.
func (k *valueKinds) of(field string) valueKind {
	if v, ok := k.m.Load(field); ok {
		return v.(valueKind)
	}
	kind := storedOnly
	if k.index != nil {
		fm := k.index.FieldMappingForPath(field)
		last := field[strings.LastIndexByte(field, '.')+1:]
		if fm.Store && fm.Index && fm.DocValues && (fm.Name == "" || fm.Name == last) {
			switch {
			case fm.Type == "number":
				kind = numberValue
			case fm.Type == "geopoint":
				kind = geoPointValue
			case fm.Type == "boolean":
				kind = boolValue
			case fm.Type == "text" && fm.Analyzer == "keyword":
				kind = keywordValue
			}
		}
	}
	k.m.Store(field, kind)
	return kind
}

// decode turns one doc-value term of the kind into the stored value; ok
// is false for a term that is not a value (a number's coarser prefixes).
func (kind valueKind) decode(term []byte) (v any, ok bool) {
	switch kind {
	case numberValue, geoPointValue:
		pc := numeric.PrefixCoded(term)
		if shift, err := pc.Shift(); err != nil || shift != 0 {
			return nil, false
		}
		i, err := pc.Int64()
		if err != nil {
			return nil, false
		}
		if kind == numberValue {
			return numeric.Int64ToFloat64(i), true
		}
		return []float64{geo.MortonUnhashLon(uint64(i)), geo.MortonUnhashLat(uint64(i))}, true
	case boolValue:
		switch string(term) {
		case "T":
			return true, true
		case "F":
			return false, true
		}
		return nil, false
	case keywordValue:
		return string(term), true
	}
	return nil, false
}

// loadValues gives hits the values of fields: from doc values where
// their kind allows (ShardRequest.DocValues), else from the stored
// documents. A hit with more than one value in a doc-value field is read
// from its stored document (doc values keep a field's distinct values in
// term order; the stored document keeps the array's order).
func (r *Replica) loadValues(ctx context.Context, idx bleve.Index, hits []*search.DocumentMatch, fields []string) error {
	if len(hits) == 0 || len(fields) == 0 {
		return nil
	}
	var dv, stored []string
	var kinds []valueKind
	for _, f := range fields {
		if f == "*" {
			dv, stored = nil, fields
			break
		}
		if kind := r.kinds.of(f); kind != storedOnly {
			dv, kinds = append(dv, f), append(kinds, kind)
		} else {
			stored = append(stored, f)
		}
	}
	var fallback []*search.DocumentMatch // hits whose doc values are not enough
	if len(dv) > 0 {
		var err error
		if fallback, err = docValues(idx, hits, dv, kinds); err != nil {
			return err
		}
	}
	if len(stored) > 0 {
		if err := storedFields(ctx, idx, hits, stored); err != nil {
			return err
		}
	}
	if len(fallback) > 0 && len(dv) > 0 {
		for _, h := range fallback {
			for _, f := range dv {
				delete(h.Fields, f)
			}
		}
		return storedFields(ctx, idx, fallback, dv)
	}
	return nil
}

// docValues reads fields of kinds from the doc values of hits, found by
// id in the index's current snapshot (a hit deleted since has none). It
// returns the hits that hold more than one value in a field.
func docValues(idx bleve.Index, hits []*search.DocumentMatch, fields []string, kinds []valueKind) ([]*search.DocumentMatch, error) {
	adv, err := idx.Advanced()
	if err != nil {
		return nil, err
	}
	reader, err := adv.Reader()
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	dvr, err := reader.DocValueReader(fields)
	if err != nil {
		return nil, err
	}
	var fallback []*search.DocumentMatch
	counts := make([]int, len(fields)) // values seen in each field, per hit
	for _, h := range hits {
		id, err := reader.InternalID(h.ID)
		if err != nil {
			return nil, err
		}
		if id == nil {
			continue
		}
		clear(counts)
		multi := false
		err = dvr.VisitDocValues(id, func(field string, term []byte) {
			i := indexOf(fields, field)
			if i < 0 {
				return
			}
			v, ok := kinds[i].decode(term)
			if !ok {
				return
			}
			if counts[i]++; counts[i] > 1 {
				multi = true
				return
			}
			if h.Fields == nil {
				h.Fields = make(map[string]any, len(fields))
			}
			h.Fields[field] = v
		})
		if err != nil {
			return nil, err
		}
		if multi {
			fallback = append(fallback, h)
		}
	}
	return fallback, nil
}

func indexOf(fields []string, f string) int {
	for i, g := range fields {
		if g == f {
			return i
		}
	}
	return -1
}

// storedFields loads fields of hits from their stored documents, by id,
// and adds them to each hit's fields.
func storedFields(ctx context.Context, idx bleve.Index, hits []*search.DocumentMatch, fields []string) error {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	byID, err := fetchStored(ctx, idx, ids, fields)
	if err != nil {
		return err
	}
	for _, h := range hits {
		f := byID[h.ID]
		if h.Fields == nil {
			h.Fields = f
			continue
		}
		for k, v := range f {
			h.Fields[k] = v
		}
	}
	return nil
}

// fetchStored loads fields of the documents ids, by id.
func fetchStored(ctx context.Context, idx bleve.Index, ids, fields []string) (map[string]map[string]any, error) {
	fr := bleve.NewSearchRequestOptions(query.NewDocIDQuery(ids), len(ids), 0, false)
	fr.Fields = fields
	fres, err := idx.SearchInContext(ctx, fr)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]map[string]any, len(fres.Hits))
	for _, h := range fres.Hits {
		byID[h.ID] = h.Fields
	}
	return byID, nil
}

// fetch answers a fetch request (wire.PhaseFetch): the fields of the
// documents it names, in its order; a document deleted since comes back
// without fields.
func (r *Replica) fetch(ctx context.Context, req *wire.ShardRequest) (*wire.ShardResponse, error) {
	if len(req.IDs) > api.MaxWindow {
		return nil, api.BadRequest("fetch at most %d documents, got %d", api.MaxWindow, len(req.IDs))
	}
	idx, err := r.acquire()
	if err != nil {
		return nil, err
	}
	defer r.mu.RUnlock()
	hits := make([]*search.DocumentMatch, len(req.IDs))
	for i, id := range req.IDs {
		hits[i] = &search.DocumentMatch{ID: id}
	}
	if err := r.loadValues(ctx, idx, hits, req.Fields); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, api.Errorf(api.CodeTimeout, "shard %d: %v", r.cfg.Shard, ctxErr)
		}
		return nil, err
	}
	out := &wire.ShardResponse{Hits: make([]api.Hit, 0, len(hits)), Seq: r.Seq(), Generation: r.generation}
	for _, h := range hits {
		out.Hits = append(out.Hits, api.Hit{ID: h.ID, Fields: h.Fields})
	}
	return out, nil
}
