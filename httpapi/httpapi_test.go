package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/control"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/natstest"
)

// serve starts the HTTP API on a client of a real nats-server with
// JetStream, Quarry's resources made and the control API served (it
// creates indexes); it returns the server's URL, the log and the
// connection.
func serve(t *testing.T) (string, *bytes.Buffer, *client.Client) {
	t.Helper()
	ns := natstest.Start(t)
	nc := ns.Conn(t, "httpapi-test")
	st, err := meta.Open(t.Context(), ns.JS, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctl := control.New(nc, st, nil)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("control API: %v", err)
		}
	})
	select {
	case <-ctl.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the control API is not ready after 10s")
	}
	c, err := client.New(context.Background(), nc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	srv := httptest.NewServer(Strict(Handler(c, Options{MaxBulkBytes: 1 << 20, Logger: slog.New(slog.NewTextHandler(&logged, nil))})))
	t.Cleanup(srv.Close)
	return srv.URL, &logged, c
}

type answer struct {
	status int
	id     string
	err    struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
}

func call(t *testing.T, method, url, body string, header ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		// Bodies go with their route's type (a plugin is a module).
		ct := "application/json"
		if strings.Contains(url, "/plugins/") {
			ct = "application/wasm"
		}
		req.Header.Set("Content-Type", ct)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, id: resp.Header.Get("X-Request-Id")}
	var out struct {
		Error *json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &out) == nil && out.Error != nil {
		json.Unmarshal(*out.Error, &a.err)
	}
	return a
}

// Every JSON body is read strictly, and query parameters must be valid
// UTF-8: what encoding/json would take quietly or rewrite is a 400 naming
// the field, in the API's words.
func TestHTTPStrictBodies(t *testing.T) {
	url, _, _ := serve(t)
	cases := []struct {
		name, method, path, body, want string
	}{
		{"create: wrong case", "POST", "/v1/indexes/a", `{"Shards":1}`,
			`malformed index definition: unknown field "Shards" (field names are case-sensitive: did you mean "shards"?)`},
		{"create: duplicate", "POST", "/v1/indexes/a", `{"shards":1,"shards":4}`, `malformed index definition: duplicate field "shards"`},
		{"create: unknown", "POST", "/v1/indexes/a", `{"shardz":1}`, `unknown field "shardz"; the fields are: shards, team, mapping, query, documents`},
		{"create: type", "POST", "/v1/indexes/a", `{"shards":"2"}`, "malformed index definition: shards must be an integer, got a string"},
		{"create: nested", "POST", "/v1/indexes/a", `{"shards":1,"query":{"limits":{"max_terms":1.5}}}`, "query.limits.max_terms must be an integer, got 1.5"},
		{"create: mapping duplicate", "POST", "/v1/indexes/a", `{"shards":1,"mapping":{"default_analyzer":"en","default_analyzer":"x"}}`, `duplicate field "default_analyzer" in mapping`},
		{"create: invalid UTF-8", "POST", "/v1/indexes/a", "{\"shards\":1,\"query\":{\"fields\":[{\"field\":\"n\xff\"}]}}", "invalid UTF-8 in query.fields[0].field at byte 42"},
		{"create: trailing", "POST", "/v1/indexes/a", `{"shards":1}{"shards":2}`, "data after the JSON value at byte 12"},
		{"create: empty", "POST", "/v1/indexes/a", ``, "malformed index definition: invalid JSON at byte 0: unexpected end of input"},
		{"query settings: wrong case", "PUT", "/v1/indexes/a/query", `{"Operator":"and"}`, `malformed query settings: unknown field "Operator"`},
		{"query settings: duplicate", "PUT", "/v1/indexes/a/query", `{"fuzziness":1,"fuzziness":2}`, `duplicate field "fuzziness"`},
		{"pipeline: wrong case", "PUT", "/v1/indexes/a/pipeline", `{"Rankers":[]}`, `malformed pipeline: unknown field "Rankers"`},
		{"pipeline: step", "PUT", "/v1/indexes/a/pipeline", `{"rankers":[{"plugin":"p","digest":"d","budget_ms":"5"}]}`, "rankers[0].budget_ms must be an integer, got a string"},
		{"plugin config: duplicate", "POST", "/v1/indexes/a/plugins/p?config=%7B%22k%22%3A1%2C%22k%22%3A2%7D", "wasm", `config: duplicate field "k"`},
		{"query parameter", "POST", "/v1/indexes/a/plugins/p?fields=n%FFame", "wasm", `query parameter fields is not valid UTF-8: "n\xffame"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := call(t, c.method, url+c.path, c.body)
			if a.status != 400 || a.err.Code != "bad_request" || !strings.Contains(a.err.Message, c.want) {
				t.Fatalf("%d %+v, want 400 bad_request %q", a.status, a.err, c.want)
			}
			for _, leak := range []string{"Go struct", "of type", "json:", "api."} {
				if strings.Contains(a.err.Message, leak) {
					t.Fatalf("%q shows an internal detail (%s)", a.err.Message, leak)
				}
			}
		})
	}
}

// An unexpected error (here NATS gone under the client) answers 500
// "internal error (request id …)", the id in X-Request-Id too (the
// caller's, when it sent one), and its detail is in the log under that
// id, not in the answer.
func TestHTTPInternalErrorHidden(t *testing.T) {
	ns := natstest.Start(t)
	nc := ns.Conn(t, "httpapi-test")
	c, err := client.New(context.Background(), nc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	srv := httptest.NewServer(Handler(c, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))}))
	defer srv.Close()
	nc.Close()
	for _, sent := range []string{"", "my-req-42"} {
		var hdr []string
		if sent != "" {
			hdr = []string{"X-Request-Id", sent}
		}
		a := call(t, "GET", srv.URL+"/v1/indexes", "", hdr...)
		if a.status != 500 || a.err.Code != "internal" || a.err.Message != "internal error (request id "+a.id+")" || a.id == "" {
			t.Fatalf("%d %+v (X-Request-Id %q), want 500 internal error naming the request id", a.status, a.err, a.id)
		}
		if sent != "" && a.id != sent {
			t.Fatalf("request id %q, want the caller's %q", a.id, sent)
		}
		if !strings.Contains(logged.String(), "request_id="+a.id) || !strings.Contains(logged.String(), "connection closed") {
			t.Fatalf("the log does not have the detail under the request id:\n%s", logged.String())
		}
	}
}
