package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/quarrysearch/quarry/api/jsonenc"
	"github.com/quarrysearch/quarry/internal/querystats"
	"github.com/quarrysearch/quarry/internal/wire"
)

// TestColumnsFollowTheIndex: hits held while the index changes under them
// get the fields a lookup by id gives (bleve's), whether their columns
// still describe them or not: a document updated or deleted since the
// search, every document after a merge moved them all, and a merged
// segment before and after its columns are made.
func TestColumnsFollowTheIndex(t *testing.T) {
	t.Parallel()
	docs, mapping := oddCatalog(t, 400)
	r := loadReplicas(t, 1, mapping, docs)[0]
	ctx := context.Background()
	fields := []string{"rating", "price", "location", "scores", "name"}
	if err := r.Warm(ctx, nil); err != nil {
		t.Fatal(err)
	}
	cols := columnsOf(r.idx)
	cols.want(fields)
	var warmed map[uint64]bool // the segments columns were made for
	warm := func() {
		t.Helper()
		if err := r.Warm(ctx, nil); err != nil {
			t.Fatal(err)
		}
		warmed = segmentIDs(t, r)
	}
	warm()
	hits := func(n int) []*search.DocumentMatch {
		t.Helper()
		res, err := r.idx.SearchInContext(ctx, bleve.NewSearchRequestOptions(query.NewMatchAllQuery(), 1000, 0, false))
		if err != nil || len(res.Hits) != n {
			t.Fatalf("%v, %d hits", err, len(res.Hits))
		}
		return res.Hits
	}
	// check loads fields of hs and compares them with bleve's, and how
	// many came from columns with wantServed (-1: fewer than all live).
	check := func(name string, hs []*search.DocumentMatch, wantServed int) {
		t.Helper()
		before := cols.served.Load()
		raws, err := loadFields(ctx, r.idx, hs, fields, nil)
		if err != nil {
			t.Fatal(err)
		}
		// scorch merges in the background: the count holds while the
		// segments whose columns were made are all there.
		got := int(cols.served.Load() - before)
		if !segmentsKept(t, r, warmed) {
			t.Logf("%s: %d hits served from columns; scorch merged segments meanwhile", name, got)
		} else if wantServed >= 0 && got != wantServed || wantServed < 0 && got >= len(hs)-2 {
			t.Errorf("%s: %d hits served from columns, want %d", name, got, wantServed)
		}
		ref := make([]*search.DocumentMatch, len(hs))
		for i, h := range hs {
			ref[i] = &search.DocumentMatch{ID: h.ID}
		}
		if err := bleveFields(ctx, r.idx, ref, fields); err != nil {
			t.Fatal(err)
		}
		for i, h := range ref {
			var want []byte
			if h.Fields != nil {
				want, _ = jsonenc.AppendObject(nil, h.Fields, nil)
			}
			if string(raws[i]) != string(want) {
				t.Fatalf("%s, %s:\ncolumns %s\nbleve   %s", name, h.ID, raws[i], want)
			}
		}
	}
	held := hits(len(docs))
	for try := 0; ; try++ { // columns of every segment the search read
		if segmentsKept(t, r, warmed) || try == 20 {
			break
		}
		warm()
		held = hits(len(docs))
	}
	check("as searched", held, len(docs))

	// One document updated, one deleted: both looked up by id.
	upd := map[string]any{}
	for k, v := range docs[10] {
		upd[k] = v
	}
	upd["rating"], upd["price"] = 1.5, 99.25
	indexDocs(t, []*Replica{r}, []map[string]any{upd})
	deleteDocs(t, []*Replica{r}, []string{docs[20]["id"].(string)})
	check("updated and deleted", held, len(docs)-2)

	// A merge moves every document: the held hits' numbers name others
	// (or none), and each is looked up by id.
	if err := r.ForceMerge(ctx); err != nil {
		t.Fatal(err)
	}
	check("merged, held hits", held, 0)
	fresh := hits(len(docs) - 1)
	check("merged, columns not made yet", fresh, 0)
	warm()
	check("merged, columns made", fresh, len(docs)-1)
	// The held hits' numbers now name other documents, mostly: those are
	// looked up by id.
	check("merged, held hits, columns made", held, -1)
	if n := len(cols.segs); n != 1 {
		t.Errorf("the cache holds %d segments' columns, want the merged one", n)
	}
}

// TestColumnBytesBound: past Config.ColumnBytes a replica makes no more
// columns, and its hits load from stored documents, the same fields.
func TestColumnBytesBound(t *testing.T) {
	t.Parallel()
	docs, mapping := oddCatalog(t, 300)
	r := loadReplicas(t, 1, mapping, docs)[0]
	cols := columnsOf(r.idx)
	cols.maxBytes.Store(100)
	cols.want([]string{"name", "price"})
	if err := r.Warm(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if n := cols.bytes.Load(); n > 100 {
		t.Fatalf("the columns hold %d bytes, bound 100", n)
	}
	checkFieldsAsBleve(t, []*Replica{r}, json.RawMessage(`{"match_all":{}}`), []string{"name", "price"})
	if n := cols.served.Load(); n != 0 {
		t.Fatalf("%d hits served from columns the bound left unmade", n)
	}
}

// TestColumnFieldsBound: a replica keeps columns of at most
// maxColumnFields fields; the fields asked past them load from stored
// documents and say why.
func TestColumnFieldsBound(t *testing.T) {
	t.Parallel()
	c := newColumnCache()
	for i := range maxColumnFields {
		if !c.want([]string{fmt.Sprintf("f%d", i)}) {
			t.Fatalf("field %d refused", i)
		}
	}
	if c.want([]string{"f0", "one-more"}) {
		t.Fatal("a field past the bound was kept")
	}
	if !strings.Contains(c.skip["one-more"], "32 fields already") || len(c.wanted()) != maxColumnFields || !c.want([]string{"f1", "f2"}) {
		t.Fatalf("skip %q, %d wanted", c.skip["one-more"], len(c.wanted()))
	}
}

// segmentIDs are the ids of r's current segments.
func segmentIDs(tb testing.TB, r *Replica) map[uint64]bool {
	tb.Helper()
	snap, closeSnap, err := openSnapshot(r.idx)
	if err != nil {
		tb.Fatal(err)
	}
	defer closeSnap()
	ids := map[uint64]bool{}
	for _, ss := range snap.Segments() {
		ids[ss.Id()] = true
	}
	return ids
}

// segmentsKept reports whether every segment of ids is still r's.
func segmentsKept(tb testing.TB, r *Replica, ids map[uint64]bool) bool {
	tb.Helper()
	now := segmentIDs(tb, r)
	for id := range ids {
		if !now[id] {
			return false
		}
	}
	return true
}

// TestColumnBuildStopsAtBound: a segment whose columns would pass the
// bytes left stops being read a stride past the bound, rather than being
// built whole and then dropped (its memory held once, however large).
func TestColumnBuildStopsAtBound(t *testing.T) {
	t.Parallel()
	docs, mapping := oddCatalog(t, 2000)
	r := loadReplicas(t, 1, mapping, docs)[0]
	if err := r.ForceMerge(context.Background()); err != nil { // one segment of them all
		t.Fatal(err)
	}
	snap, closeSnap, err := openSnapshot(r.idx)
	if err != nil {
		t.Fatal(err)
	}
	defer closeSnap()
	var big *scorch.SegmentSnapshot
	for _, ss := range snap.Segments() {
		if big == nil || ss.Count() > big.Count() {
			big = ss
		}
	}
	if big == nil || big.Count() < 4*buildStride {
		t.Fatalf("the largest segment holds %d documents, want %d or more to see the build stop", big.Count(), 4*buildStride)
	}
	c := columnsOf(r.idx)
	fields := []string{"description", "name"}
	_, built, err := c.buildSegment(context.Background(), big, fields, true, 1<<40)
	if err != nil || len(built) == 0 {
		t.Fatalf("unbounded: %v, %d columns", err, len(built))
	}
	var whole int64
	for _, col := range built {
		whole += col.size()
	}
	budget := whole / 8
	_, _, err = c.buildSegment(context.Background(), big, fields, true, budget)
	var over *overBound
	if !errors.As(err, &over) {
		t.Fatalf("bound %d of %d bytes: %v, want the build stopped", budget, whole, err)
	}
	if over.visited >= big.Count()/2 {
		t.Fatalf("stopped after %d of %d documents for an eighth of the bytes", over.visited, big.Count())
	}
}

// TestColumnIDs: a search's hits carry the ids scorch gives, read from
// the columns where a segment has them (querystats.Reader.ExternalID),
// for every document of a replica written in batches (many segments),
// after updates and deletes (a column keeps a deleted document's id, as
// scorch does), and after a merge, before and after its columns are made.
func TestColumnIDs(t *testing.T) {
	t.Parallel()
	docs, mapping := oddCatalog(t, 300)
	r := loadReplicas(t, 1, mapping, docs)[0]
	ctx := context.Background()
	cols := columnsOf(r.idx)
	// check compares every document number's id through the shard's
	// reader with scorch's own, and says how many came from columns.
	check := func(name string) int {
		t.Helper()
		adv, err := r.idx.Advanced()
		if err != nil {
			t.Fatal(err)
		}
		reader, err := adv.Reader()
		if err != nil {
			t.Fatal(err)
		}
		defer reader.Close()
		qr, ok := reader.(*querystats.Reader)
		if !ok {
			t.Fatalf("the shard's reader is a %T", reader)
		}
		lookup := cols.Lookup(qr.IndexReader)
		all, err := qr.IndexReader.DocIDReaderAll()
		if err != nil {
			t.Fatal(err)
		}
		defer all.Close()
		fromColumns, n := 0, 0
		for {
			id, err := all.Next()
			if err != nil {
				t.Fatal(err)
			}
			if id == nil {
				break
			}
			n++
			got, err := qr.ExternalID(id)
			if err != nil {
				t.Fatal(err)
			}
			want, err := qr.IndexReader.ExternalID(id)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%s: document %x is %q, scorch says %q", name, id, got, want)
			}
			if lookup != nil {
				if s, ok := lookup(id); ok {
					fromColumns++
					if s != want {
						t.Fatalf("%s: the columns say document %x is %q, scorch %q", name, id, s, want)
					}
				}
			}
		}
		if n < len(docs)-2 {
			t.Fatalf("%s: %d documents read", name, n)
		}
		return fromColumns
	}
	if got := check("no columns"); got != 0 {
		t.Fatalf("no columns: %d ids from columns", got)
	}
	cols.want([]string{"rating"})
	warm := func() {
		t.Helper()
		if err := r.Warm(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	warm()
	if got := check("columns"); got == 0 {
		t.Fatal("columns made, and no id read from them")
	}
	upd := map[string]any{}
	for k, v := range docs[10] {
		upd[k] = v
	}
	upd["rating"] = 1.5
	indexDocs(t, []*Replica{r}, []map[string]any{upd})
	deleteDocs(t, []*Replica{r}, []string{docs[20]["id"].(string)})
	check("updated and deleted")
	if err := r.ForceMerge(ctx); err != nil {
		t.Fatal(err)
	}
	check("merged")
	warm()
	if got := check("merged, columns made"); got == 0 {
		t.Fatal("merged, columns made, and no id read from them")
	}
}

// BenchmarkHitIDs: a shard's search for a ranker's 24 candidates (bleve's
// collector reads 50 hits' ids, tieOverfetch) on 5,000 catalogue items
// merged into one segment, its ids read by scorch from the stored
// documents and from the columns, side by side.
//
//	go test -run XXX -bench HitIDs -benchmem -count 3 ./internal/shard/
func BenchmarkHitIDs(b *testing.B) {
	docs, mapping := oddCatalog(b, 5000)
	reps := loadReplicas(b, 2, mapping, nil)
	indexDocs(b, reps[:1], docs)
	indexDocs(b, reps[1:], docs)
	ctx := context.Background()
	req := &wire.ShardRequest{Query: json.RawMessage(`{"match":"chicken","field":"_all"}`), K: 24}
	for i, name := range []string{"stored", "columns"} {
		r := reps[i]
		if err := r.ForceMerge(ctx); err != nil {
			b.Fatal(err)
		}
		if name == "columns" {
			columnsOf(r.idx).want([]string{"rating"})
		}
		if err := r.Warm(ctx, nil); err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res, err := r.Search(ctx, req); err != nil || len(res.Hits) != 24 {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestColumnSweepKeepsNewer: a build from a snapshot taken before a merge,
// run after a build that made the merged segment's columns (the
// background pass and a generation's Warm, one waiting for the other),
// keeps those columns: it sweeps only segments older than its newest.
func TestColumnSweepKeepsNewer(t *testing.T) {
	t.Parallel()
	docs, mapping := oddCatalog(t, 400)
	r := loadReplicas(t, 1, mapping, docs)[0]
	ctx := context.Background()
	cols := columnsOf(r.idx)
	cols.want([]string{"rating"})
	stale, closeStale, err := openSnapshot(r.idx) // the segments as written
	if err != nil {
		t.Fatal(err)
	}
	defer closeStale()
	if err := r.ForceMerge(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Warm(ctx, nil); err != nil {
		t.Fatal(err)
	}
	merged := segmentIDs(t, r)
	if len(merged) != 1 {
		t.Fatalf("%d segments after the merge", len(merged))
	}
	if err := cols.build(ctx, func() (*scorch.IndexSnapshot, func(), error) { return stale, func() {}, nil }); err != nil {
		t.Fatal(err)
	}
	cols.mu.RLock()
	defer cols.mu.RUnlock()
	for id := range merged {
		if cols.segs[id] == nil {
			t.Errorf("the merged segment %d lost its columns to a build from an older snapshot", id)
		}
	}
}
