package httpapi

import (
	"strings"
	"testing"
)

// Each route takes the body types it reads and refuses others with 415
// before it acts: a search, an index, a pipeline JSON; documents, events
// and judgement lists NDJSON or JSON; a plugin a module.
func TestHTTPContentTypes(t *testing.T) {
	t.Parallel()
	url, _, _ := serve(t)
	cases := []struct {
		method, path, ctype, body string
		refused                   bool
	}{
		{"POST", "/v1/indexes/a", "text/plain;charset=UTF-8", `{"shards":1}`, true},
		{"POST", "/v1/indexes/a", "application/x-www-form-urlencoded", `{"shards":1}`, true},
		{"POST", "/v1/indexes/a/search", "text/plain", `{"q":"x"}`, true},
		{"PUT", "/v1/indexes/a/pipeline", "text/plain", `{}`, true},
		{"POST", "/v1/indexes/a/plugins/p", "text/plain", "\x00asm", true},
		{"POST", "/v1/indexes/a/plugins/p", "application/json", "\x00asm", true},
		{"POST", "/v1/indexes/a/documents", "text/plain", `{"id":"1"}`, true},
		{"PUT", "/v1/indexes/a/judgements/j", "multipart/form-data; boundary=b", `{}`, true},
		{"POST", "/v1/indexes/a/events", "text/plain", `[]`, true},
		{"POST", "/v1/indexes/a", "application/json", `{"shards":1}`, false},
		{"POST", "/v1/indexes/a/documents", "application/x-ndjson", `{"id":"1"}`, false},
		{"POST", "/v1/indexes/a/documents", "application/json", `{"id":"2"}`, false},
		{"POST", "/v1/indexes/a/plugins/p", "application/wasm", "\x00asm", false},
		{"POST", "/v1/indexes/a/plugins/p", "application/octet-stream", "\x00asm", false},
		{"POST", "/v1/indexes/a/events", "application/x-ndjson", `{}`, false},
		{"POST", "/v1/indexes/a/plugins/p/activate?digest=x", "", "", false},
	}
	for _, c := range cases {
		a := call(t, c.method, url+c.path, c.body, "Content-Type", c.ctype)
		if refused := a.status == 415; refused != c.refused {
			t.Errorf("%s %s (%s): %d %+v, want refused %v", c.method, c.path, c.ctype, a.status, a.err, c.refused)
		}
		if a.status == 415 && (a.err.Code != "unsupported_media_type" || !strings.Contains(a.err.Message, "-H 'Content-Type: ")) {
			t.Errorf("%s %s: %+v does not say what to send", c.method, c.path, a.err)
		}
	}
	// Refused before anything was done: the index was made by the JSON
	// request alone, with one shard.
	if a := call(t, "GET", url+"/v1/indexes/a", ""); a.status != 200 {
		t.Fatalf("GET the index: %d %+v", a.status, a.err)
	}
}
