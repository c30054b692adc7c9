package node

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/subject"
)

// httpDo sends one request to a node's HTTP API and returns the status and
// the body.
func httpDo(t testing.TB, n *Node, method, path, body string) (int, []byte) {
	t.Helper()
	url := "http://" + n.HTTPAddr + path
	typed, _ := http.NewRequest(method, url, nil)
	setBodyType(typed, body)
	var header []string
	if ct := typed.Header.Get("Content-Type"); ct != "" {
		header = []string{"Content-Type", ct}
	}
	code, _, raw := httpRequest(t, method, url, body, header...)
	return code, []byte(raw)
}

// noInternals fails when a message shows Go's or a library's words.
func noInternals(t testing.TB, what, msg string) {
	t.Helper()
	for _, leak := range []string{"Go struct", "of type", "json:", "0xc0", "bm25", "api.", "map[string]interface"} {
		if strings.Contains(msg, leak) {
			t.Errorf("%s: %q shows an internal detail (%s)", what, msg, leak)
		}
	}
}

// Invalid UTF-8 in a document is refused per line, never replaced: ids
// col\xff and col\xfe were both stored as col\uFFFD, the second
// overwriting the first. Over HTTP (the 207 body), through client.Bulk
// (its per-line errors) and client.Put; an id with invalid UTF-8 cannot
// be read or deleted either.
func TestStrictDocuments(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	c, ctx := n.Client(), context.Background()
	if _, err := c.CreateIndex(ctx, "u", 2, nil); err != nil {
		t.Fatal(err)
	}
	body := "{\"id\":\"col\xff\",\"v\":1}\n" +
		"{\"id\":\"col\xfe\",\"v\":2}\n" +
		"{\"id\":\"ok\",\"name\":\"caf\xe9\"}\n" +
		"{\"id\":\"ok2\",\"na\xffme\":\"x\"}\n" +
		"{\"ID\":\"upper\"}\n" +
		"{\"id\":\"dup\",\"id\":\"other\"}\n" +
		"{\"id\":\"good\",\"name\":\"caf\u00e9\"}\n"
	wantErrs := []struct {
		line int
		msg  string
	}{
		{1, "malformed document: invalid UTF-8 in id at byte 10"},
		{2, "malformed document: invalid UTF-8 in id at byte 10"},
		{3, "malformed document: invalid UTF-8 in name at byte 22"},
		{4, "malformed document: invalid UTF-8 in a field name at byte 15"},
		{5, `document has no "id" field (field names are case-sensitive: it has "ID")`},
		{6, `malformed document: duplicate field "id" at byte 12`},
	}
	code, raw := httpDo(t, n, "POST", "/v1/indexes/u/documents", body)
	var res struct {
		Stored, Failed int
		Errors         []struct {
			Line  int
			Error string
		}
	}
	if err := json.Unmarshal(raw, &res); err != nil || code != 207 || res.Stored != 1 || res.Failed != len(wantErrs) || len(res.Errors) != len(wantErrs) {
		t.Fatalf("HTTP ingest: %d %s", code, raw)
	}
	for i, w := range wantErrs {
		if res.Errors[i].Line != w.line || res.Errors[i].Error != w.msg {
			t.Errorf("HTTP ingest error %d: %+v, want line %d %q", i, res.Errors[i], w.line, w.msg)
		}
	}
	br, err := c.Bulk(ctx, "u", strings.NewReader(body), client.BulkOptions{NoSnapshot: true})
	if err != nil || br.Stored != 1 || br.Failed != len(wantErrs) {
		t.Fatalf("client.Bulk: %+v %v", br, err)
	}
	for i, w := range wantErrs {
		if br.Errors[i].Line != w.line || br.Errors[i].Err != w.msg {
			t.Errorf("client.Bulk error %d: %+v, want line %d %q", i, br.Errors[i], w.line, w.msg)
		}
	}
	if _, err := c.Put(ctx, "u", []byte("{\"id\":\"col\xff\"}")); !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "invalid UTF-8 in id") {
		t.Fatalf("Put: %v", err)
	}
	// Nothing was stored under the replacement character.
	if _, err := c.Get(ctx, "u", "col\uFFFD"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("get col\\uFFFD: %v, want not found", err)
	}
	if doc, err := c.Get(ctx, "u", "good"); err != nil || !strings.Contains(string(doc.Source), "caf\u00e9") {
		t.Fatalf("get good: %+v %v", doc, err)
	}
	if _, err := c.Get(ctx, "u", "col\xff"); !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "not valid UTF-8 (byte 3)") {
		t.Fatalf("get col\\xff: %v", err)
	}
	if _, err := c.Delete(ctx, "u", "col\xfe"); !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "not valid UTF-8 (byte 3)") {
		t.Fatalf("delete col\\xfe: %v", err)
	}
	for _, method := range []string{"GET", "DELETE"} {
		if code, raw := httpDo(t, n, method, "/v1/indexes/u/documents/col%FF", ""); code != 400 || !strings.Contains(string(raw), "not valid UTF-8") {
			t.Errorf("%s documents/col%%FF: %d %s", method, code, raw)
		}
	}
}

// The search request is read strictly at every door (NATS, HTTP, the Go
// client): keys in another case, twice or unknown, invalid UTF-8 in q,
// sort, fields, facets and inside query and filter, wrong types: 400
// naming the field and where, in the API's words.
func TestStrictSearch(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	c, ctx := n.Client(), context.Background()
	noodleIndex(t, c, "s", "s")
	cases := []struct {
		body, want string
	}{
		{`{"Q":"noodles"}`, `malformed search request: unknown field "Q" (field names are case-sensitive: did you mean "q"?)`},
		{`{"q":"noodles","q":"soup"}`, `malformed search request: duplicate field "q" at byte 15`},
		{`{"q":"x","size":"ten"}`, "malformed search request: size must be an integer, got a string"},
		{`{"q":"x","allow_partial":"no"}`, "malformed search request: allow_partial must be true or false, got a string"},
		{`{"facets":{"f":{"field":"text","Size":2}}}`, `unknown field "Size" in facets.f`},
		{"{\"q\":\"noodl\xe9s\"}", "malformed search request: invalid UTF-8 in q at byte 11"},
		{"{\"sort\":[\"te\xffxt\"]}", "invalid UTF-8 in sort[0] at byte 12"},
		{"{\"fields\":[\"na\xffme\"]}", "invalid UTF-8 in fields[0] at byte 14"},
		{"{\"facets\":{\"f\":{\"field\":\"te\xffxt\"}}}", "invalid UTF-8 in facets.f.field at byte 27"},
		{"{\"query\":{\"match\":\"x\",\"field\":\"te\xffxt\"}}", "invalid UTF-8 in query.field at byte 33"},
		{"{\"filter\":{\"te\xffrm\":\"x\"}}", "invalid UTF-8 in a field name in filter at byte 14"},
		{`{"query":{"match":"x","boost":"high"}}`, "query: boost must be a number, got a string"},
		{`{"query":{"match":"x","field":"a","field":"b"}}`, `duplicate field "field" in query`},
		{`{"q":"\ud800"}`, "lone UTF-16 surrogate) in q at byte 6"},
	}
	for _, tc := range cases {
		// NATS: the micro error and its JSON body.
		msg, err := n.Conn().Request(subject.Search("s"), []byte(tc.body), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var e api.Error
		if msg.Header.Get(micro.ErrorCodeHeader) != "400" || json.Unmarshal(msg.Data, &e) != nil || e.Code != api.CodeBadRequest || !strings.Contains(e.Message, tc.want) {
			t.Errorf("NATS %q: %s %s, want 400 %q", tc.body, msg.Header.Get(micro.ErrorCodeHeader), msg.Data, tc.want)
		}
		noInternals(t, "NATS "+tc.body, e.Message)
		// HTTP.
		code, raw := httpDo(t, n, "POST", "/v1/indexes/s/search", tc.body)
		if code != 400 || !strings.Contains(string(raw), jsonString(tc.want)) {
			t.Errorf("HTTP %q: %d %s, want 400 %q", tc.body, code, raw, tc.want)
		}
		noInternals(t, "HTTP "+tc.body, string(raw))
	}
	// The Go client refuses invalid UTF-8 rather than send U+FFFD.
	if _, err := c.Search(ctx, "s", &api.SearchRequest{Q: "noodl\xe9s"}); !errors.Is(err, api.ErrBadRequest) || err.Error() != "q is not valid UTF-8 (byte 5)" {
		t.Errorf("client.Search: %v", err)
	}
	if r, err := c.Search(ctx, "s", &api.SearchRequest{Q: "noodles"}); err != nil || r.Total != 10 {
		t.Fatalf("a good search: %+v %v", r, err)
	}
}

// jsonString is s as it appears inside a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// Admin requests over NATS are read strictly too.
func TestStrictAdminRequests(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	if _, err := n.Client().CreateIndex(context.Background(), "adm", 1, nil); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		op, body, want string
	}{
		{"plugin.activate", `{"Name":"p","digest":"d"}`, `malformed admin request: unknown field "Name" (field names are case-sensitive: did you mean "name"?)`},
		{"plugin.rm", `{"name":"a","name":"b"}`, `malformed admin request: duplicate field "name"`},
		{"plugin.canary", `{"name":"p","percent":"10"}`, "malformed admin request: percent must be an integer, got a string"},
		{"pipeline.set", `{"spec":{"rankers":[{"plugin":"p","digest":"d","Policy":"fail-open"}]}}`, `unknown field "Policy" in spec.rankers[0]`},
		{"plugin.register", `{"name":"p","samples":[{"Q":"x"}]}`, `unknown field "Q" in samples[0]`},
		{"plugin.rm", "{\"name\":\"p\xff\"}", "malformed admin request: invalid UTF-8 in name at byte 10"},
	}
	for _, tc := range cases {
		msg, err := n.Conn().Request(subject.Admin("adm", tc.op), []byte(tc.body), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var e api.Error
		if msg.Header.Get(micro.ErrorCodeHeader) != "400" || json.Unmarshal(msg.Data, &e) != nil || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s %q: %s %s, want 400 %q", tc.op, tc.body, msg.Header.Get(micro.ErrorCodeHeader), msg.Data, tc.want)
		}
		noInternals(t, tc.op, e.Message)
	}
}
