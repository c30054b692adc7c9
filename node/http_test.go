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

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/wasmtest"
)

func TestHTTPAPI(t *testing.T) {
	n := startNode(t)
	base := "http://" + n.HTTPAddr
	do := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
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
	n := startNode(t)
	base := "http://" + n.HTTPAddr
	if _, err := n.Client().CreateIndex(context.Background(), "hp", 1, nil); err != nil {
		t.Fatal(err)
	}
	do := func(method, path string, body []byte) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
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
