package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/searcher"
)

// storedIDs returns the ids of index's documents in the stream, sorted.
func storedIDs(t *testing.T, n *Node, def api.IndexDefinition, ids ...string) []string {
	t.Helper()
	info, err := n.store.Docs.Info(context.Background(), jetstream.WithSubjectFilter(subject.DocsOfIndex(def.Name)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, id := range ids { // the subjects of the ids asked about
		if _, ok := info.State.Subjects[subject.Doc(def.Name, subject.ShardOf(id, def.Shards), id)]; ok {
			got = append(got, id)
		}
	}
	if len(info.State.Subjects) != len(got) {
		t.Errorf("the stream holds %d documents of %s, %d of them among %q", len(info.State.Subjects), def.Name, len(got), ids)
	}
	return got
}

// mustRefuse checks err is a refusal with code saying each of want.
func mustRefuse(t *testing.T, what string, err error, code api.Code, want ...string) {
	t.Helper()
	if api.CodeOf(err) != code {
		t.Errorf("%s: %v (%s), want %s", what, err, api.CodeOf(err), code)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %v, want it to say %q", what, err, w)
		}
	}
}

// TestDocumentLimits: a document over its index's limits is refused
// where it comes in (client.Put, client.Bulk, the HTTP API's ingest),
// naming the limit and the document's id, and nothing of it is stored: at
// most documents.max_fields distinct field paths, documents.max_depth
// levels, and no number a float64 cannot hold; and one that would take
// the index past documents.max_index_fields field paths, counted over
// every document and every client. Before, every one of them was stored
// (3 documents of 100,000 fields each took a node from 50 MB to 1.94 GB).
func TestDocumentLimits(t *testing.T) {
	t.Parallel()
	n := startConfig(t, Config{Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	ctx := context.Background()
	c := n.Client()
	def, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "lim", Shards: 2, Documents: api.DocumentLimits{MaxFields: 5, MaxDepth: 3, MaxIndexFields: 8}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "bad", Shards: 1, Documents: api.DocumentLimits{MaxIndexFields: 10001}}); err == nil || !strings.Contains(err.Error(), "documents.max_index_fields must be between 0 (the default) and 10000, got 10001") {
		t.Errorf("a limit over its ceiling: %v", err)
	}
	put := func(doc string) error {
		_, err := c.Put(ctx, "lim", []byte(doc))
		return err
	}
	// Index fields: id, name, n.
	if err := put(`{"id":"a","name":"x","n":1}`); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, "6 fields", put(`{"id":"wide","f1":1,"f2":2,"f3":3,"f4":4,"f5":5}`), api.CodeDocumentTooComplex,
		`document "wide" has more than 5 fields`, "(documents.max_fields)")
	mustRefuse(t, "4 levels", put(`{"id":"deep","a":{"b":[[1]]}}`), api.CodeDocumentTooComplex,
		`document "deep" nests deeper than 3 levels`, "(documents.max_depth)")
	mustRefuse(t, "1e400", put(`{"id":"hn","v":1e400}`), api.CodeBadRequest,
		`malformed document "hn": v must be a number that fits in a 64-bit float, got 1e400`)
	// The index's own limit: 8 distinct paths.
	if err := put(`{"id":"b","name":"y","p":1,"q":2}`); err != nil { // 5
		t.Fatal(err)
	}
	if err := put(`{"id":"c","r":{"s":1},"t":3}`); err != nil { // 8: r, r.s, t
		t.Fatal(err)
	}
	err = put(`{"id":"d","u":1,"name":"z"}`)
	mustRefuse(t, "a 9th field", err, api.CodeDocumentTooComplex,
		`document "d" would take index "lim" to at least 9 fields (it has 8; the document adds 1, "u" among them), over its limit of 8 (documents.max_index_fields)`)
	if !errors.Is(err, api.ErrDocumentTooComplex) {
		t.Errorf("%v is not an ErrDocumentTooComplex", err)
	}
	// Another client, which has seen none of the index's fields, is held
	// to the same count; documents of known fields still go in.
	other, err := client.New(ctx, n.Conn(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Put(ctx, "lim", []byte(`{"id":"e","v":1}`))
	mustRefuse(t, "a 9th field from another client", err, api.CodeDocumentTooComplex, "it has 8", `"v" among them`)
	if _, err := other.Put(ctx, "lim", []byte(`{"id":"f","name":"w","r":{"s":5}}`)); err != nil {
		t.Fatalf("known fields from another client: %v", err)
	}

	// Bulk: each refused line says why and which document; the rest go in.
	res, err := c.Bulk(ctx, "lim", strings.NewReader(`{"id":"g","name":"bulk","t":1}
{"id":"wide2","f1":1,"f2":2,"f3":3,"f4":4,"f5":5}
{"id":"deep2","r":{"s":[[1]]}}
{"id":"new2","w":1}
`), client.BulkOptions{NoSnapshot: true})
	if err != nil || res.Stored != 1 || res.Failed != 3 || len(res.Errors) != 3 {
		t.Fatalf("bulk: %+v %v", res, err)
	}
	for i, want := range []string{`"wide2" has more than 5 fields`, `"deep2" nests deeper than 3 levels`, `"new2" would take index "lim" to at least 9 fields`} {
		if e := res.Errors[i]; e.Line != i+2 || !strings.Contains(e.Err, want) {
			t.Errorf("bulk line %d: %+v, want it to say %q", i+2, e, want)
		}
	}
	// Over HTTP: 207, the line's error in the body.
	code, body := httpDo(t, n, "POST", "/v1/indexes/lim/documents", `{"id":"wide3","f1":1,"f2":2,"f3":3,"f4":4,"f5":5}`+"\n"+`{"id":"hn2","v":-2E+999}`+"\n")
	if code != 207 || !bytes.Contains(body, []byte(`document \"wide3\" has more than 5 fields`)) || !bytes.Contains(body, []byte(`malformed document \"hn2\"`)) || !bytes.Contains(body, []byte(`"stored":0`)) {
		t.Errorf("HTTP ingest: %d %s", code, body)
	}

	// Nothing of a refused document was stored.
	all := []string{"a", "wide", "deep", "hn", "b", "c", "d", "e", "f", "g", "wide2", "deep2", "new2", "wide3", "hn2"}
	if got, want := storedIDs(t, n, def, all...), []string{"a", "b", "c", "f", "g"}; !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	waitIndexed(t, c, "lim", 5)
	// The index's count is exported, beside its limit.
	for name, want := range map[string]float64{"quarry_indexer_index_fields": 8, "quarry_indexer_index_fields_limit": 8} {
		if got := counter(t, n, name, map[string]string{"index": "lim"}); got != want {
			t.Errorf("%s: %g, want %g", name, got, want)
		}
	}
}

// appliedDocs waits until the node's indexer has applied (indexed or
// rejected) docs documents of index and returns how many it rejected.
func appliedDocs(t *testing.T, n *Node, index string, docs int) (rejected int) {
	t.Helper()
	testwait.UntilErr(t, 30*time.Second, fmt.Sprintf("the indexer applies %d documents of %s", docs, index), func() error {
		indexed := counter(t, n, "quarry_indexer_documents_total", map[string]string{"index": index, "result": "indexed"})
		rejected = int(counter(t, n, "quarry_indexer_documents_total", map[string]string{"index": index, "result": "rejected"}))
		if got := int(indexed) + rejected; got != docs {
			return fmt.Errorf("%d applied", got)
		}
		return nil
	})
	return rejected
}

// TestUnappliableDocumentsSkipped: a document in the stream that its
// index's limits refuse or that cannot be decoded (it came before the
// limits, or from a writer that bypassed the client) is skipped where it
// is applied, counted (quarry_indexer_documents_total{result="rejected"})
// and logged with its id, never indexed; a node that replays the stream
// from its start skips it again and serves the rest. Before, documents
// over the limits were indexed (and 100,000 fields each, replayed at
// every start, took the node out of memory again: a crash loop).
func TestUnappliableDocumentsSkipped(t *testing.T) {
	t.Parallel()
	roles := Config{Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}}
	n := startConfig(t, roles)
	ctx := context.Background()
	def, err := n.Client().CreateIndexDef(ctx, api.IndexDefinition{Name: "raw", Shards: 1, Documents: api.DocumentLimits{MaxFields: 5, MaxDepth: 3}})
	if err != nil {
		t.Fatal(err)
	}
	docs := []struct{ id, doc string }{
		{"wide", `{"id":"wide","f1":1,"f2":2,"f3":3,"f4":4,"f5":5}`},
		{"deep", `{"id":"deep","a":{"b":[[1]]}}`},
		{"hn", `{"id":"hn","v":1e400}`},
		{"junk", `{"id":"junk",`},
		{"dup", `{"id":"dup","a":1,"a":2}`},
		{"att1", `{"id":"att1","_id":"good","name":"hijack"}`},
		{"good", `{"id":"good","name":"kept"}`},
	}
	for _, d := range docs { // straight into the stream, past the client
		if _, err := n.store.JS.Publish(ctx, subject.Doc(def.Name, subject.ShardOf(d.id, def.Shards), d.id), []byte(d.doc)); err != nil {
			t.Fatal(err)
		}
	}
	if got := appliedDocs(t, n, "raw", len(docs)); got != len(docs)-1 {
		t.Fatalf("%d documents rejected, want %d: every one but good", got, len(docs)-1)
	}
	c := n.Client()
	waitIndexed(t, c, "raw", 1)
	// Each serving replica says how many it skipped (GET
	// /v1/indexes/raw, the console's index page).
	info, err := c.IndexInfo(ctx, "raw")
	if err != nil {
		t.Fatal(err)
	}
	var rejected uint64
	for _, sh := range info.ShardStatus {
		for _, r := range sh.Serving {
			rejected += r.Rejected
		}
	}
	if rejected != uint64(len(docs)-1) {
		t.Errorf("the searchers' status says %d rejected, want %d: %+v", rejected, len(docs)-1, info.ShardStatus)
	}
	for _, d := range docs {
		r, err := c.Search(ctx, "raw", &api.SearchRequest{Query: json.RawMessage(`{"ids":[` + strconv.Quote(d.id) + `]}`)})
		if err != nil || (r.Total == 1) != (d.id == "good") {
			t.Errorf("search for %s: %+v %v", d.id, r, err)
		}
	}
	// A node that replays the whole stream, with its own indexer and
	// searcher, skips them again and serves good.
	cfg := roles
	cfg.NATSURL = n.NATSURL()
	n2 := startConfig(t, cfg)
	if got := appliedDocs(t, n2, "raw", len(docs)); got != len(docs)-1 {
		t.Errorf("on replay: %d documents rejected, want %d", got, len(docs)-1)
	}
	waitIndexed(t, n2.Client(), "raw", 1)
	// Each is recorded once: indexers record them (a searcher of its own
	// records none), and the second indexer's records, published within
	// the stream's duplicate window, are stored once with the first's.
	testwait.UntilErr(t, 30*time.Second, "the second indexer's records published", func() error {
		if got := counter(t, n2, "quarry_indexer_rejection_records_total", map[string]string{"result": "recorded"}); got != float64(len(docs)-1) {
			return fmt.Errorf("%g recorded", got)
		}
		return nil
	})
	listed, err := c.RejectedDocuments(ctx, "raw", 0)
	if err != nil || len(listed) != len(docs)-1 {
		t.Errorf("listed %d rejected documents (%v), want %d: %+v", len(listed), err, len(docs)-1, listed)
	}
	if info, err := n.store.Rejected.Info(ctx); err != nil || info.State.Msgs != uint64(len(docs)-1) {
		t.Errorf("the stream holds %d records (%v), want %d: each once", info.State.Msgs, err, len(docs)-1)
	}
}

// wideDoc is a document of fields distinct field paths ("f0000":1, …),
// under a megabyte for 100,000 of them.
func wideDoc(id string, fields int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"id":%q`, id)
	for i := range fields {
		b.WriteString(`,"f`)
		s := strconv.FormatInt(int64(i), 36)
		b.WriteString(strings.Repeat("0", 4-len(s)) + s)
		b.WriteString(`":1`)
	}
	b.WriteString("}")
	return b.Bytes()
}

// TestDocumentLimitsWorstCase: the documents, 3 of 100,000
// fields each (a megabyte each, under the 1 MiB document limit), against
// an index with the default limits: the client refuses each at once,
// nothing is stored; written straight into the stream, the indexer skips
// each, and the node's heap does not grow with them. Before, they were
// stored and indexed: RSS 50 MB to 1.94 GB, and out of memory at 8.
// Not parallel: it measures the heap.
func TestDocumentLimitsWorstCase(t *testing.T) {
	n := startConfig(t, Config{Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	ctx := context.Background()
	c := n.Client()
	def, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "worst", Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	for i := range 3 {
		doc := wideDoc(fmt.Sprint("w", i), 100_000)
		if len(doc) > api.DefaultMaxDocBytes {
			t.Fatalf("the document is %d bytes, over the document limit", len(doc))
		}
		body.Write(doc)
		body.WriteByte('\n')
	}
	wide := bytes.Clone(body.Bytes())
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	before := heap()
	start := time.Now()
	res, err := c.Bulk(ctx, "worst", &body, client.BulkOptions{NoSnapshot: true})
	took := time.Since(start)
	if err != nil || res.Stored != 0 || res.Failed != 3 || !strings.Contains(res.Errors[0].Err, `document "w0" has more than 1000 fields`) {
		t.Fatalf("bulk of 3 documents of 100,000 fields: %+v %v", res, err)
	}
	if got := storedIDs(t, n, def, "w0", "w1", "w2"); len(got) != 0 {
		t.Errorf("stored %q", got)
	}
	// Straight into the stream: skipped where they are applied.
	for i, doc := range bytes.Split(bytes.TrimSpace(wide), []byte("\n")) {
		id := fmt.Sprint("w", i)
		if _, err := n.store.JS.Publish(ctx, subject.Doc(def.Name, subject.ShardOf(id, def.Shards), id), doc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Put(ctx, "worst", []byte(`{"id":"ok","name":"after them"}`)); err != nil {
		t.Fatal(err)
	}
	if got := appliedDocs(t, n, "worst", 4); got != 3 {
		t.Errorf("%d rejected, want the 3 wide documents", got)
	}
	waitIndexed(t, c, "worst", 1)
	after := heap()
	grew := int64(after) - int64(before)
	t.Logf("3 documents of 100,000 fields (%d bytes in all): refused by the client in %s; skipped by the indexer; heap in use %d MB, then %d MB", len(wide), took.Round(time.Millisecond), before>>20, after>>20)
	if took > 3*time.Second {
		t.Errorf("the client took %s to refuse them", took)
	}
	if grew > 64<<20 {
		t.Errorf("the heap grew by %d MB", grew>>20)
	}
}
