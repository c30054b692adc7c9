package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/searcher"
)

// The HTTP doors, fuzzed against a real node (NATS, broker, searchers,
// indexer) started once per fuzz target. Whatever the body: no panic (the
// node would be gone), no 5xx (client input is the client's problem: a
// 400 naming it, in the API's words, never Go's or a library's), an
// answer within the request's deadline. A 504 is an answer only to a
// request that set its own timeout_ms.
// .ci/run runs each briefly; QUARRY_FUZZ_TIME runs them longer.

// fuzzBulkLimit is the fuzz node's cap on an ingest body, small enough
// for a seed to cross it.
const fuzzBulkLimit = 64 << 10

// fuzzNode starts the node the fuzzers share: index "fz" (2 shards, the
// catalogue's mapping) holding 200 catalogue documents and a few with
// dates, searchable; index "fi" (2 shards, the default mapping) empty.
func fuzzNode(tb testing.TB) *Node {
	tb.Helper()
	n := startConfig(tb, Config{Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{},
		MaxBulkBytes: fuzzBulkLimit})
	c, ctx := n.Client(), context.Background()
	if _, err := c.CreateIndex(ctx, "fz", 2, catalog.Mapping()); err != nil {
		tb.Fatal(err)
	}
	if _, err := c.CreateIndex(ctx, "fi", 2, nil); err != nil {
		tb.Fatal(err)
	}
	body := bytes.NewBuffer(catalogNDJSON(tb, 200))
	for i := range 5 {
		fmt.Fprintf(body, `{"id":"dated-%d","name":"dated noodles %d","opened":"2024-0%d-01T00:00:00Z","price":%d}`+"\n", i, i, i+1, 10+i)
	}
	mustBulk(tb, c, "fz", body)
	waitDocs(tb, n, 205)
	return n
}

// httpPost posts body and returns the status, the answer and the time.
func httpPost(tb testing.TB, hc *http.Client, url string, body []byte) (int, []byte, time.Duration) {
	tb.Helper()
	start := time.Now()
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		tb.Fatalf("POST %s: %v (after %s)", url, err, time.Since(start))
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, time.Since(start)
}

// searchSeeds are the worst search bodies: huge q, deep nesting, invalid
// UTF-8, duplicate and wrong-case keys, wrong types, and queries only a
// shard can find wrong (regexps, dates, geo shapes).
func searchSeeds() [][]byte {
	return [][]byte{
		[]byte(`{"q":"spicy noodles","size":3,"from":1,"fields":["*"],"facets":{"c":{"field":"cuisine","size":3}},"sort":["-price","_score"],"profile":true}`),
		[]byte(`{"q":"` + strings.Repeat("noodle ", 1200) + `"}`),
		[]byte(`{"query":` + strings.Repeat(`{"conjuncts":[`, 40) + `{"match":"soup"}` + strings.Repeat(`]}`, 40) + `}`),
		[]byte(`{"query":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`),
		[]byte("{\"q\":\"col\xff\",\"sort\":[\"\xfe\"],\"fields\":[\"na\xc3\"]}"),
		[]byte(`{"q":"a","q":"b","Q":"c","Size":1}`),
		[]byte(`{"size":"ten","from":[],"facets":1,"timeout_ms":1e99,"allow_partial":"no"}`),
		[]byte(`{"query":{"query":"name:noodle* AND (price:>5 OR /pad.*/) -cuisine:thai"}}`),
		[]byte(`{"query":{"query":"a AND (b OR"}}`),
		[]byte(`{"query":{"regexp":"[","field":"name"}}`),
		[]byte(`{"query":{"regexp":"(a+)+b.*x{1000}","field":"name"}}`),
		[]byte(`{"query":{"wildcard":"*o*o*o*","field":"description"},"filter":{"min":5,"max":"x","field":"price"}}`),
		[]byte(`{"query":{"start":"yesterday","end":"2025-01-01","field":"opened"}}`),
		[]byte(`{"query":{"start":"2024-01-01T00:00:00Z","field":"opened"},"sort":["opened","-_id"]}`),
		[]byte(`{"query":{"start":"0"},"sort":[""]}`), // found by this fuzzer: a 500
		[]byte(`{"query":{"regexp":"noodle.*?$","field":"name"},"sort":["price"]}`),
		[]byte(`{"query":{"location":{"lat":40.7,"lon":-73.9},"distance":"5km","field":"location"},"sort":[{"by":"geo_distance"}]}`),
		[]byte(`{"query":{"location":{"lat":"x"},"distance":"-1parsecs","field":"location"}}`),
		[]byte(`{"query":{"polygon_points":[[1,2]],"field":"location"}}`),
		[]byte(`{"query":{"geometry":{"shape":5},"field":"location"}}`),
		[]byte(`{"query":{"cidr":"x","field":"ip"},"sort":["price"]}`),
		[]byte(`{"query":{"match":"noodles","field":"name","fuzziness":2,"prefix_length":-1,"operator":"xor"}}`),
		[]byte(`{"query":{"match":"x","boost":"high"}}`),
		[]byte(`{"query":{"disjuncts":[{"match":"x"}],"min":99}}`),
		[]byte(`{"query":{"term":"x","field":"_id"},"sort":["-_score","_id","price","rating","nope"]}`),
		[]byte(`{"size":0,"facets":{"a":{"field":"cuisine","size":100000}}}`),
		[]byte(`{"size":10000,"from":1}`),
		[]byte(`{"timeout_ms":1,"q":"noodles"}`),
		[]byte(`{"variant":{"plugin":"nope","digest":"sha256:00"}}`),
		[]byte(`{"context":{"user":"u","user":"v"}}`),
		[]byte(`{"q":"\ud800\udc00\ud800"}`),
		[]byte(`null`),
		[]byte(``),
		[]byte(`{}`),
	}
}

// FuzzHTTPSearch fuzzes POST /v1/indexes/{index}/search on a real node.
func FuzzHTTPSearch(f *testing.F) {
	n := fuzzNode(f)
	for _, seed := range searchSeeds() {
		f.Add(seed)
	}
	hc := &http.Client{Timeout: 90 * time.Second}
	url := "http://" + n.HTTPAddr + "/v1/indexes/fz/search"
	f.Fuzz(func(t *testing.T, body []byte) {
		code, raw, took := httpPost(t, hc, url, body)
		bound, ownDeadline := 5*time.Second, false
		if req, err := broker.DecodeRequest(body); err == nil && req.TimeoutMS > 0 {
			ownDeadline = true
			bound = max(bound, time.Duration(min(req.TimeoutMS, 60000))*time.Millisecond+2*time.Second)
		}
		if code >= 500 && !(code == 504 && ownDeadline) {
			t.Fatalf("%d for client input %.300q: %s", code, body, raw)
		}
		if took > bound {
			t.Fatalf("took %s (bound %s) for %.300q", took, bound, body)
		}
		if code != 200 && !json.Valid(raw) {
			t.Fatalf("%d with a body that is not JSON: %q", code, raw)
		}
		if code != 200 {
			noInternalWords(t, body, raw)
		}
	})
}

// internalWords are signs of an internal detail in an error message: Go's
// type names, encoding/json's and jsoniter's words, pointers.
var internalWords = []string{"Go struct", "Go value", "of type", "json: ", "interface {}", "0xc000", "readObjectStart", "error found in #"}

// noInternalWords fails when an error answer shows an internal detail.
func noInternalWords(t *testing.T, body, answer []byte) {
	t.Helper()
	for _, w := range internalWords {
		if bytes.Contains(answer, []byte(w)) {
			t.Fatalf("the answer to %.300q shows an internal detail (%s): %s", body, w, answer)
		}
	}
}

// ingestSeeds are the worst NDJSON bodies.
func ingestSeeds() [][]byte {
	return [][]byte{
		[]byte("{\"id\":\"a\",\"name\":\"noodles\"}\n{\"id\":\"b\",\"price\":3}\n"),
		[]byte("{\"id\":\"col\xff\"}\n{\"id\":\"col\xfe\"}\n{\"id\":\"ok\",\"n\xffame\":1}\n"),
		[]byte(`{"id":"d","id":"e"}` + "\n" + `{"ID":"x"}` + "\n" + `{"id":"f","a":{"b":1,"b":2}}` + "\n"),
		[]byte(`{"id":7}` + "\n" + `{"id":""}` + "\n" + `{"id":null}` + "\n" + `[1,2]` + "\n" + `"x"` + "\n" + `{"id":"` + strings.Repeat("i", 600) + `"}` + "\n"),
		[]byte(`{"id":"deep","v":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + "}\n"),
		[]byte(`{"id":"big","v":"` + strings.Repeat("x", fuzzBulkLimit) + "\"}\n"),
		[]byte("{\"id\":\"crlf\"}\r\n\r\n\n{\"id\":\"\\ud800\"}\n{\"id\":\"x\"} trailing\n{\"id\":"),
		[]byte("\xef\xbb\xbf{\"id\":\"bom\"}\n"),
		[]byte(`{"id":"t","opened":"2024-13-45T99:00:00Z","location":{"lat":"x","lon":999},"price":1e400}` + "\n"),
		[]byte(``),
	}
}

// FuzzHTTPIngest fuzzes POST /v1/indexes/{index}/documents on a real node.
func FuzzHTTPIngest(f *testing.F) {
	n := fuzzNode(f)
	for _, seed := range ingestSeeds() {
		f.Add(seed)
	}
	hc := &http.Client{Timeout: 90 * time.Second}
	url := "http://" + n.HTTPAddr + "/v1/indexes/fi/documents"
	f.Fuzz(func(t *testing.T, body []byte) {
		code, raw, took := httpPost(t, hc, url, body)
		switch code {
		case 200, 207:
			var res struct{ Lines, Stored, Failed int }
			if err := json.Unmarshal(raw, &res); err != nil || res.Stored+res.Failed != res.Lines {
				t.Fatalf("%d %s for %.300q", code, raw, body)
			}
		case 400:
			if !json.Valid(raw) {
				t.Fatalf("400 with a body that is not JSON: %q", raw)
			}
			noInternalWords(t, body, raw)
		default:
			t.Fatalf("%d for client input %.300q: %s", code, body, raw)
		}
		if took > 30*time.Second {
			t.Fatalf("took %s for %.300q", took, body)
		}
	})
}
