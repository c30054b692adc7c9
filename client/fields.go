package client

import (
	"context"
	"time"

	"github.com/quarrysearch/quarry/api"
)

// indexFields is what a client knows of an index's field paths: a subset
// of the stored set (meta.Store.IndexFields), which only grows.
type indexFields struct {
	created time.Time // the definition's, so that a new index of the name starts afresh
	known   map[uint64]struct{}
}

// admitFields holds a document to its index's limit on field paths
// (api.DocumentLimits.MaxIndexFields): a document whose paths the index
// has all is admitted at once; one with new paths is recorded in the
// index's set first (a compare-and-set on the Fields bucket), or refused
// if they would take the index past its limit. Only documents that bring
// new paths cost a round trip, so at most the limit's number of writes
// per index, and a document refused from what the client already knows
// costs none: the stored set holds at least what the client knows.
func (c *Client) admitFields(ctx context.Context, def api.IndexDefinition, d api.Document, doc []byte) error {
	lim := def.Documents.Effective()
	c.fieldsMu.Lock()
	defer c.fieldsMu.Unlock()
	f := c.fields[def.Name]
	if f == nil || !f.created.Equal(def.Created) {
		f = &indexFields{created: def.Created, known: map[uint64]struct{}{}}
		c.fields[def.Name] = f
	}
	var fresh []uint64
	for _, h := range d.Fields {
		if _, ok := f.known[h]; !ok {
			fresh = append(fresh, h)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	if len(f.known)+len(fresh) > lim.MaxIndexFields {
		return c.tooManyFields(def, d, doc, f)
	}
	st, err := c.metaStore(ctx)
	if err != nil {
		return err
	}
	all, ok, err := st.AddFields(ctx, def, fresh, lim.MaxIndexFields)
	if err != nil {
		return err
	}
	for _, h := range all {
		f.known[h] = struct{}{}
	}
	if !ok {
		return c.tooManyFields(def, d, doc, f)
	}
	return nil
}

// tooManyFields makes the error of a document refused for its index's
// limit on field paths, from what the client knows of them (f).
func (c *Client) tooManyFields(def api.IndexDefinition, d api.Document, doc []byte, f *indexFields) error {
	added, example := 0, ""
	for _, p := range api.FieldPaths(doc) {
		if _, ok := f.known[api.FieldHash(p)]; !ok {
			if added == 0 {
				example = p
			}
			added++
		}
	}
	return api.TooManyIndexFields(def.Name, d.ID, len(f.known), added, example, def.Documents)
}
