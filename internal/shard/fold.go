package shard

import (
	"encoding/json"

	"github.com/blevesearch/bleve/v2"
)

// Folding fresh segments (WriteOptions.FreshSegments).
//
// Every applied batch is a new in-memory segment, and every search looks
// each term up in every segment. scorch merges in-memory segments only when
// its persister writes them (once a nap, WriteOptions.PersistNap), so under
// a steady trickle of updates a shard gathers a segment per batch until
// then: about twenty at 25 updates a second, and each search pays a
// dictionary lookup in each (docs/performance.md, "Writes and the search
// tail"). scorch offers no merge of in-memory segments, but it drops a
// segment whose every document has been replaced. So a replica remembers
// the documents it applied since it last held no in-memory segment, and
// when a batch would leave more than FreshSegments of them, the batch
// indexes those documents again, each as its latest version: the batch's
// one segment then holds every fresh document, and the segments before it,
// all of whose documents it replaces, leave the index. The documents, their
// contents and so every statistic are unchanged; only the segments that
// hold them are fewer.

// Bounds of what a replica remembers for folding: past either, it stops
// remembering until its fresh segments are persisted (a bulk load's large
// batches are not folded; they are few and large).
const (
	maxFreshDocs  = 256
	maxFreshBytes = 1 << 20
)

// freshOp is a document a batch indexes (data, its JSON) or deletes (data
// nil).
type freshOp struct {
	id   string
	data []byte
}

// freshDocs is what a replica applied since it last held no in-memory
// segment: the latest version of each document indexed since (deleted ones
// removed). Only the apply loop uses it.
type freshDocs struct {
	docs  map[string][]byte // the document's JSON, by id
	bytes int
	over  bool // past a bound since the reset: not folding until the next
}

// reset forgets everything: the fresh segments are persisted.
func (f *freshDocs) reset() {
	clear(f.docs)
	f.bytes, f.over = 0, false
}

// indexed remembers that doc (JSON) was indexed as id.
func (f *freshDocs) indexed(id string, doc []byte) {
	if f.over {
		return
	}
	if f.docs == nil {
		f.docs = map[string][]byte{}
	}
	f.bytes += len(doc) - len(f.docs[id])
	f.docs[id] = doc
	if len(f.docs) > maxFreshDocs || f.bytes > maxFreshBytes {
		f.reset()
		f.over = true
	}
}

// deleted forgets id.
func (f *freshDocs) deleted(id string) {
	f.bytes -= len(f.docs[id])
	delete(f.docs, id)
}

// fold adds to b, about to be applied with ops (the batch's own documents,
// indexed or deleted), the fresh documents it does not replace itself,
// when the batch would otherwise leave more than FreshSegments in-memory
// segments. It returns how many documents it added. Before deciding, it
// forgets the fresh documents if the index holds no in-memory segment. A
// fold that cannot be made is skipped (and logged), never an error: what
// it added is each document's latest version again, so a part of a fold is
// as correct as none.
func (r *Replica) fold(b *bleve.Batch, ops []freshOp) int {
	limit := r.cfg.Writes.FreshSegments
	if limit <= 0 {
		return 0
	}
	sc, err := r.scorch()
	if err != nil {
		return 0
	}
	_, mem := rootSegments(sc)
	if mem == 0 {
		r.fresh.reset()
		return 0
	}
	if mem < uint64(limit) || r.fresh.over || len(r.fresh.docs) == 0 {
		return 0
	}
	ids := make(map[string]bool, len(ops))
	for _, o := range ops {
		ids[o.id] = true
	}
	n := 0
	for id, data := range r.fresh.docs {
		if ids[id] {
			continue // the batch has its newer version, or deletes it
		}
		var doc map[string]any
		err := json.Unmarshal(data, &doc)
		if err == nil {
			err = r.index(b, id, doc)
		}
		if err != nil {
			r.cfg.Logger.Warn("not folding fresh segments", "id", id, "err", err)
			r.fresh.reset()
			r.fresh.over = true
			return n
		}
		n++
	}
	return n
}
