package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/searcher"
)

func TestHTTPAPI(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	base := "http://" + n.HTTPAddr
	do := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		setBodyType(req, body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatalf("%s %s: body %q is not JSON", method, path, raw)
			}
		}
		return resp.StatusCode, out
	}
	errMsg := func(out map[string]any) string {
		e, _ := out["error"].(map[string]any)
		s, _ := e["message"].(string)
		return s
	}

	if code, out := do("POST", "/v1/indexes/h", `{"shards":2}`); code != 201 {
		t.Fatalf("create: %d %v", code, out)
	}
	if code, out := do("POST", "/v1/indexes/h", `{"shards":2}`); code != 409 || !strings.Contains(errMsg(out), "already exists") {
		t.Fatalf("create twice: %d %v", code, out)
	}
	body := `{"id":"1","text":"spicy noodles"}
{"id":"2","text":"mild soup"}
not json
{"text":"no id"}
{"id":"3","text":"spicy soup"}
`
	code, out := do("POST", "/v1/indexes/h/documents?snapshot=true", body)
	if code != 207 || out["stored"].(float64) != 3 || out["failed"].(float64) != 2 {
		t.Fatalf("ingest: %d %v", code, out)
	}
	errs := out["errors"].([]any)
	if errs[0].(map[string]any)["line"].(float64) != 3 || errs[1].(map[string]any)["line"].(float64) != 4 {
		t.Fatalf("ingest errors name the wrong lines: %v", errs)
	}
	waitTotal(t, n.Client(), "h", "spicy", 2)
	code, out = do("POST", "/v1/indexes/h/search", `{"q":"spicy noodles","fields":["*"]}`)
	if code != 200 || out["hits"].([]any)[0].(map[string]any)["id"] != "1" {
		t.Fatalf("search: %d %v", code, out)
	}
	// The simple cases as URL parameters: the same request, the same
	// answer.
	code, out = do("GET", "/v1/indexes/h/search?q=spicy+noodles&fields=text,id&size=1", "")
	if code != 200 || len(out["hits"].([]any)) != 1 || out["hits"].([]any)[0].(map[string]any)["id"] != "1" ||
		out["hits"].([]any)[0].(map[string]any)["fields"].(map[string]any)["text"] != "spicy noodles" {
		t.Fatalf("GET search: %d %v", code, out)
	}
	if code, out := do("GET", "/v1/indexes/h/search?q=spicy&size=0", ""); code != 200 || out["total"] != float64(2) || len(out["hits"].([]any)) != 0 {
		t.Fatalf("GET search, size=0: %d %v", code, out)
	}
	if code, out := do("DELETE", "/v1/indexes/h/documents/1", ""); code != 200 {
		t.Fatalf("delete doc: %d %v", code, out)
	}
	waitTotal(t, n.Client(), "h", "spicy", 1)

	bad := []struct {
		method, path, body string
		code               int
		msg                string
	}{
		{"POST", "/v1/indexes/nope/search", `{"q":"x"}`, 404, `index "nope" does not exist`},
		{"POST", "/v1/indexes/h/search", `{"q":`, 400, "malformed search request"},
		{"POST", "/v1/indexes/h/search", `{"size":"ten"}`, 400, "malformed search request"},
		{"POST", "/v1/indexes/h/search", `{"query":{"match":5}}`, 400, "query"},
		{"GET", "/v1/indexes/h/search?q=x&query=y", ``, 400, `unknown parameter "query": GET …/search takes explain, fields, from`},
		{"GET", "/v1/indexes/h/search?q=x&size=ten", ``, 400, `parameter "size": "ten" is not a whole number`},
		{"GET", "/v1/indexes/h/search?suggest=name", ``, 400, "suggest completes the last word of q"},
		{"GET", "/v1/indexes/h/search?q=x&q=y", ``, 400, `parameter "q" given 2 times`},
		{"GET", "/v1/indexes/h/search?q=x&size=-5", ``, 400, "size"},
		{"GET", "/v1/indexes/nope/search?q=x", ``, 404, `index "nope" does not exist`},
		{"POST", "/v1/indexes/nope/documents", `{"id":"1"}`, 404, "does not exist"},
		{"POST", "/v1/indexes/BAD", `{"shards":1}`, 400, "invalid index name"},
		{"POST", "/v1/indexes/x", `{"shards":1,"mapping":{"default_analyzer":"nope"}}`, 400, "bad mapping"},
		{"POST", "/v1/indexes/x", `{"shardz":1}`, 400, "unknown field"},
		{"DELETE", "/v1/indexes/nope", ``, 404, "does not exist"},
	}
	for _, b := range bad {
		code, out := do(b.method, b.path, b.body)
		if code != b.code || !strings.Contains(errMsg(out), b.msg) {
			t.Errorf("%s %s %s: %d %q, want %d %q", b.method, b.path, b.body, code, errMsg(out), b.code, b.msg)
		}
	}
	if code, out := do("GET", "/v1/indexes", ""); code != 200 || len(out["indexes"].([]any)) != 1 {
		t.Fatalf("list: %d %v", code, out)
	}
	if code, _ := do("DELETE", "/v1/indexes/h", ""); code != 204 {
		t.Fatalf("delete index: %d", code)
	}
	if code, _ := do("GET", "/v1/indexes/h", ""); code != 404 {
		t.Fatalf("deleted index still there: %d", code)
	}
}

func TestHTTPPluginAdmin(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	base := "http://" + n.HTTPAddr
	if _, err := n.Client().CreateIndex(context.Background(), "hp", 1, nil); err != nil {
		t.Fatal(err)
	}
	do := func(method, path string, body []byte) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		setBodyType(req, string(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	// An index without plugins lists none as an empty list, not null:
	// the console's Plugins page read null's length and failed on every
	// new index.
	if code, out := do("GET", "/v1/indexes/hp/plugins", nil); code != 200 || fmt.Sprint(out["versions"]) != "[]" {
		t.Fatalf("plugins of a new index: %d %#v, want versions []", code, out["versions"])
	}
	wasm := wasmtest.WATFile(t, "../examples/plugins/wat/suffix.wat")
	code, out := do("POST", "/v1/indexes/hp/plugins/suffix?kind=rewriter&activate=true&budget_ms=20", wasm)
	if code != 200 || out["valid"] != true {
		t.Fatalf("push: %d %v", code, out)
	}
	digest := out["digest"].(string)
	code, out = do("GET", "/v1/indexes/hp/pipeline", nil)
	if code != 200 || len(out["rewriters"].([]any)) != 1 {
		t.Fatalf("pipeline: %d %v", code, out)
	}
	if code, out := do("POST", "/v1/indexes/hp/plugins/junk?kind=rewriter", []byte("junk")); code != 400 || !strings.Contains(fmt.Sprint(out), "not a WebAssembly module") {
		t.Fatalf("push junk: %d %v", code, out)
	}
	if code, _ := do("POST", "/v1/indexes/hp/plugins/suffix/activate?digest=sha256:"+strings.Repeat("1", 64), nil); code != 404 {
		t.Fatalf("activate unknown digest: %d", code)
	}
	if code, out := do("DELETE", "/v1/indexes/hp/plugins/suffix", nil); code != 200 || out["rewriters"] != nil {
		t.Fatalf("remove: %d %v", code, out)
	}
	if code, out := do("POST", "/v1/indexes/hp/pipeline/rollback", nil); code != 200 || len(out["rewriters"].([]any)) != 1 {
		t.Fatalf("rollback: %d %v", code, out)
	}
	if code, out := do("POST", "/v1/indexes/hp/plugins/suffix/activate?digest="+digest, nil); code != 200 {
		t.Fatalf("activate: %d %v", code, out)
	}
	if code, _ := do("GET", "/v1/indexes/nope/plugins", nil); code != 404 {
		t.Fatalf("unknown index: %d", code)
	}
	// Canary, shadow and promote a second version.
	code, out = do("POST", "/v1/indexes/hp/plugins/suffix?kind=rewriter&latency_budget_ms=10&budget_ms=20", wasmtest.WAT(t, identityWAT))
	if code != 200 || out["valid"] != true {
		t.Fatalf("push a candidate: %d %v", code, out)
	}
	cand := out["digest"].(string)
	steps := func(out map[string]any) map[string]any { return out["rewriters"].([]any)[0].(map[string]any) }
	if code, out := do("POST", "/v1/indexes/hp/plugins/suffix/canary?digest="+cand+"&percent=20&sticky=user", nil); code != 200 || steps(out)["canary"] == nil {
		t.Fatalf("canary: %d %v", code, out)
	}
	if code, out := do("POST", "/v1/indexes/hp/plugins/suffix/canary?digest="+cand, nil); code != 400 || !strings.Contains(fmt.Sprint(out), "percent is required") {
		t.Fatalf("canary without a percent: %d %v", code, out)
	}
	if code, out := do("POST", "/v1/indexes/hp/plugins/suffix/shadow?digest="+cand+"&percent=50", nil); code != 200 || steps(out)["shadow"] == nil {
		t.Fatalf("shadow: %d %v", code, out)
	}
	if code, out := do("GET", "/v1/indexes/hp/plugins/suffix/shadow", nil); code != 200 || out["plugin"] != "suffix" {
		t.Fatalf("shadow stats: %d %v", code, out)
	}
	if code, out := do("POST", "/v1/indexes/hp/plugins/suffix/promote", nil); code != 200 || steps(out)["digest"] != cand {
		t.Fatalf("promote: %d %v", code, out)
	}
	req, _ := http.NewRequest("GET", base+"/v1/indexes/hp/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var evs []api.PluginEvent
	if err := json.NewDecoder(resp.Body).Decode(&evs); resp.StatusCode != 200 || err != nil {
		t.Fatalf("events: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
}

// A client that stops sending a request's body midway, or keeps an idle
// connection open, does not hold the connection for ever: the body gets
// 400 naming the wait and the connection is closed; an idle connection
// is closed after HTTPIdleTimeout. A client that drops its connection
// midway is not an internal error. Before, both connections stayed open
// as long as the client liked, each with a goroutine.
func TestHTTPSlowClients(t *testing.T) {
	n := startConfig(t, Config{HTTPBodyTimeout: 300 * time.Millisecond, HTTPIdleTimeout: 500 * time.Millisecond,
		Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	dial := func() net.Conn {
		t.Helper()
		conn, err := net.Dial("tcp", n.HTTPAddr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.SetDeadline(time.Now().Add(10 * time.Second)) // the test's own bound
		return conn
	}
	if _, err := n.Client().CreateIndex(context.Background(), "x", 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{"/v1/indexes/x/search", "400 the request body stopped coming: nothing for 300ms"},
		{"/v1/indexes/x/documents", "400 the request body stopped coming: nothing for 300ms"},
		// Refused without reading the body: the server reads the rest of
		// a small body before it answers, within the same wait.
		{"/v1/indexes/nope/documents", `404 index "nope" does not exist`},
	} {
		t.Run("a body that stops "+c.path, func(t *testing.T) {
			conn := dial()
			start := time.Now()
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"q\":", c.path)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer after %s: %v", time.Since(start), err)
			}
			body, _ := io.ReadAll(resp.Body)
			var e struct{ Error api.Error }
			json.Unmarshal(body, &e)
			if got := fmt.Sprint(resp.StatusCode, " ", e.Error.Message); got != c.want {
				t.Fatalf("%s, want %s", body, c.want)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("answered after %s", took)
			}
			if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
				t.Errorf("the connection is still open: %v", err)
			}
		})
	}
	t.Run("an idle connection", func(t *testing.T) {
		conn := dial()
		fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%v %v", resp, err)
		}
		io.ReadAll(resp.Body)
		start := time.Now()
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("idle connection: %v", err)
		}
		if took := time.Since(start); took < 250*time.Millisecond || took > 5*time.Second {
			t.Errorf("closed after %s", took)
		}
	})
	t.Run("a client that hangs up midway", func(t *testing.T) {
		conn := dial()
		fmt.Fprintf(conn, "POST /v1/indexes/x/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"q\":")
		conn.(*net.TCPConn).CloseWrite()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 400 || !strings.Contains(string(body), "the request body ended before its length") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
}
