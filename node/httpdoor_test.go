package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/httpapi"
	"github.com/quarrysearch/quarry/internal/testwait"
)

// rawConn is one HTTP/1.1 connection the test drives by hand, to see
// what the server does with the connection itself.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// get sends GET path (with extra header lines) and reads the answer.
func (c *rawConn) get(t *testing.T, path string, header ...string) (*http.Response, string, error) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", path, strings.Join(append(header, ""), "\r\n"))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return nil, "", err
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b), nil
}

// closedByServer says whether the server closes c within a few seconds
// (it reads EOF), rather than keeping it alive.
func (c *rawConn) closedByServer() error {
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	n, err := c.r.Read(make([]byte, 1))
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return fmt.Errorf("the connection is still open (%v)", err)
	}
	return fmt.Errorf("the server sent %d more bytes", n)
}

// The HTTP API keeps at most HTTPMaxConns connections: the one past it is
// answered 503, naming the flag, and closed, and a connection closed
// gives its place back. (Issue 34: 19,990 idle keep-alive connections
// took every file descriptor; NATS clients and JetStream then failed.)
func TestHTTPConnectionCap(t *testing.T) {
	t.Parallel()
	n := startConfig(t, Config{HTTPMaxConns: 8})
	var held []*rawConn
	for i := range 8 {
		c := dialRaw(t, n.HTTPAddr)
		if resp, _, err := c.get(t, "/healthz"); err != nil || resp.StatusCode != 200 {
			t.Fatalf("connection %d: %v %v, want 200", i+1, resp, err)
		}
		held = append(held, c)
	}
	ninth := dialRaw(t, n.HTTPAddr)
	resp, body, err := ninth.get(t, "/healthz")
	if err != nil || resp.StatusCode != 503 || !strings.Contains(body, "--http-max-conns") {
		t.Fatalf("the 9th connection: %v %q %v, want 503 naming --http-max-conns", resp, body, err)
	}
	if err := ninth.closedByServer(); err != nil {
		t.Fatalf("the 9th connection: %v, want it closed", err)
	}
	// The 8 kept alive still work.
	if resp, _, err := held[0].get(t, "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a held connection: %v %v, want 200", resp, err)
	}
	held[7].Close()
	testwait.UntilErr(t, 10*time.Second, "a new connection once one of the 8 is closed", func() error {
		resp, _, err := dialRaw(t, n.HTTPAddr).get(t, "/healthz")
		switch {
		case err != nil:
			return err
		case resp.StatusCode != 200:
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	if got := counter(t, n, "quarry_http_connections_refused_total", map[string]string{"cap": "total"}); got < 1 {
		t.Fatalf("quarry_http_connections_refused_total{cap=\"total\"} = %v, want at least 1", got)
	}
}

// A request without a valid token is answered 401 and its connection
// closed: a client cannot hold descriptors with connections kept alive
// after a 401 (issue 34's attack), while a valid token's connection stays
// open for the next request.
func TestHTTPUnauthorizedClosesConnection(t *testing.T) {
	t.Parallel()
	n := startConfig(t, Config{HTTPAuth: true})
	tok, _, err := n.Client().CreateToken(context.Background(), "", true, "ops")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, auth string }{{"no token", ""}, {"an unknown token", "Authorization: Bearer nope"}} {
		conn := dialRaw(t, n.HTTPAddr)
		var hdr []string
		if c.auth != "" {
			hdr = append(hdr, c.auth)
		}
		resp, _, err := conn.get(t, "/v1/indexes", hdr...)
		if err != nil || resp.StatusCode != 401 || !resp.Close {
			t.Fatalf("%s: %v %v, want 401 with Connection: close", c.name, resp, err)
		}
		if err := conn.closedByServer(); err != nil {
			t.Fatalf("%s: after the 401 %v, want it closed", c.name, err)
		}
	}
	// Until the guard knows the new token, its requests get a 401, which
	// closes their connection: each try on a connection of its own.
	var conn *rawConn
	testwait.UntilErr(t, 10*time.Second, "the operator token works", func() error {
		conn = dialRaw(t, n.HTTPAddr)
		resp, _, err := conn.get(t, "/v1/indexes", "Authorization: Bearer "+tok)
		switch {
		case err != nil:
			return err
		case resp.StatusCode != 200:
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	if resp, _, err := conn.get(t, "/v1/indexes", "Authorization: Bearer "+tok); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a second request on a valid token's connection: %v %v, want 200", resp, err)
	}
}

// Start refuses HTTP connection caps that would leave fewer than
// HTTPFDReserve descriptors under the open-file limit, saying both.
func TestHTTPConnectionCapFitsFileLimit(t *testing.T) {
	t.Parallel()
	limit, _, err := httpapi.RaiseFileLimit()
	if err != nil || limit == 0 || limit > 1<<30 {
		t.Fatalf("open-file limit %d (%v): this test needs a finite one", limit, err)
	}
	_, err = Start(context.Background(), Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", HTTPMaxConns: int(limit), Logger: testLogger()})
	var se *SettingError
	if !errors.As(err, &se) || se.Setting != SettingHTTPConns || !strings.Contains(err.Error(), fmt.Sprintf("over the limit of %d", limit)) {
		t.Fatalf("Start with as many connections as the limit: %v, want a SettingError naming the limit", err)
	}
}

// fitConns sizes the connection caps under the open-file limit.
func TestFitConns(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                      string
		in                        Config
		limit                     uint64
		total, perClient, reserve int
		err                       string
	}{
		{"defaults, a large limit", Config{}, 1 << 20, httpapi.DefaultMaxConns, httpapi.DefaultMaxConnsPerClient, 1 << 19, ""},
		{"defaults, 20,000 files", Config{}, 20000, httpapi.DefaultMaxConns, httpapi.DefaultMaxConnsPerClient, 10000, ""},
		{"defaults, 1,024 files", Config{}, 1024, 512, httpapi.DefaultMaxConnsPerClient, 512, ""},
		{"defaults, 256 files", Config{}, 256, 128, 128, 128, ""},
		{"unknown limit", Config{}, 0, httpapi.DefaultMaxConns, httpapi.DefaultMaxConnsPerClient, 0, ""},
		{"set, fits", Config{HTTPMaxConns: 15000, HTTPFDReserve: 5000}, 20000, 15000, httpapi.DefaultMaxConnsPerClient, 5000, ""},
		{"set, too many", Config{HTTPMaxConns: 15001, HTTPFDReserve: 5000}, 20000, 0, 0, 0, "need 20001 open files, over the limit of 20000"},
		{"reserve over the limit", Config{HTTPFDReserve: 20000}, 20000, 0, 0, 0, "leaves none for HTTP connections"},
		{"per client over the total", Config{HTTPMaxConns: 8, HTTPMaxConnsPerClient: 100}, 20000, 8, 8, 10000, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.in
			err := fitConns(&cfg, c.limit)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("%v, want %q", err, c.err)
				}
				return
			}
			if err != nil || cfg.HTTPMaxConns != c.total || cfg.HTTPMaxConnsPerClient != c.perClient || cfg.HTTPFDReserve != c.reserve {
				t.Fatalf("%v: total %d, per client %d, reserve %d; want %d, %d, %d", err, cfg.HTTPMaxConns, cfg.HTTPMaxConnsPerClient, cfg.HTTPFDReserve, c.total, c.perClient, c.reserve)
			}
		})
	}
}

// The open loopback API (quarry serve's defaults) refuses what a page of
// another site may send it: another Origin (403 naming --http-origins),
// a Host that is not this machine (DNS rebinding, 403 naming
// --http-hosts), a body that is not JSON (415: text/plain and forms need
// no CORS preflight); nothing is created. Programs without Origin, the
// server's own pages and listed origins go on working. (Issue 34: a page
// in Chromium created an index, wrote a document and pushed a plugin.)
func TestHTTPCrossSiteRefused(t *testing.T) {
	t.Parallel()
	n := startConfig(t, Config{Broker: &broker.Config{}, HTTPOrigins: []string{"https://app.example"}})
	base := "http://" + n.HTTPAddr
	send := func(method, path, body string, header ...string) (int, http.Header, string) {
		t.Helper()
		return httpRequest(t, method, base+path, body, header...)
	}
	refused := []struct {
		name, method, path, body string
		header                   []string
		status                   int
		says                     string
	}{
		{"another site's JSON", "POST", "/v1/indexes/evil", `{"shards":1}`, []string{"Origin", "https://evil.example", "Content-Type", "application/json"}, 403, "--http-origins"},
		{"another site's text/plain", "POST", "/v1/indexes/evil", `{"shards":1}`, []string{"Origin", "https://evil.example", "Content-Type", "text/plain;charset=UTF-8"}, 403, "--http-origins"},
		{"another site reading", "GET", "/v1/indexes", "", []string{"Origin", "https://evil.example"}, 403, "--http-origins"},
		{"a rebound name", "POST", "/v1/indexes/evil", `{"shards":1}`, []string{"Host", "rebind.evil.example:7700", "Content-Type", "application/json"}, 403, "--http-hosts"},
		{"a rebound name reading", "GET", "/v1/indexes", "", []string{"Host", "rebind.evil.example"}, 403, "--http-hosts"},
		{"text/plain", "POST", "/v1/indexes/evil", `{"shards":1}`, []string{"Content-Type", "text/plain"}, 415, "-H 'Content-Type: application/json'"},
		{"a form", "POST", "/v1/indexes/evil/documents", `{"id":"1"}`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "application/x-ndjson"},
		{"no type", "POST", "/v1/indexes/evil", `{"shards":1}`, nil, 415, "got none"},
		{"a plugin as text", "POST", "/v1/indexes/evil/plugins/p?activate=true", "\x00asm", []string{"Content-Type", "text/plain"}, 415, "application/wasm"},
	}
	for _, c := range refused {
		if code, _, body := send(c.method, c.path, c.body, c.header...); code != c.status || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %s, want %d saying %q", c.name, code, body, c.status, c.says)
		}
	}
	if code, _, body := send("GET", "/v1/indexes/evil", ""); code != 404 {
		t.Fatalf("after the refusals GET the index: %d %s, want 404", code, body)
	}
	if got := counter(t, n, "quarry_http_requests_refused_total", map[string]string{"reason": "origin"}); got != 3 {
		t.Errorf("quarry_http_requests_refused_total{reason=\"origin\"} = %v, want 3", got)
	}
	if got := counter(t, n, "quarry_http_requests_refused_total", map[string]string{"reason": "content_type"}); got != 4 {
		t.Errorf("quarry_http_requests_refused_total{reason=\"content_type\"} = %v, want 4", got)
	}
	allowed := []struct {
		name, method, path, body string
		header                   []string
		status                   int
	}{
		{"curl with JSON", "POST", "/v1/indexes/a", `{"shards":1}`, []string{"Content-Type", "application/json"}, 201},
		{"the console (same origin)", "POST", "/v1/indexes/b", `{"shards":1}`, []string{"Origin", base, "Content-Type", "application/json"}, 201},
		{"localhost, another port", "GET", "/v1/indexes", "", []string{"Host", "localhost:1"}, 200},
		{"[::1]", "GET", "/v1/indexes", "", []string{"Host", "[::1]:7700"}, 200},
		{"a listed origin", "POST", "/v1/indexes/c", `{"shards":1}`, []string{"Origin", "https://app.example", "Content-Type", "application/json"}, 201},
		{"a listed origin's preflight", "OPTIONS", "/v1/indexes/d", "", []string{"Origin", "https://app.example", "Access-Control-Request-Method", "POST"}, 204},
		{"NDJSON documents", "POST", "/v1/indexes/a/documents", `{"id":"1"}` + "\n", []string{"Content-Type", "application/x-ndjson"}, 200},
		{"a POST without a body", "POST", "/v1/indexes/a/pipeline/rollback", "", nil, 400}, // nothing to roll back to
	}
	for _, c := range allowed {
		code, hdr, body := send(c.method, c.path, c.body, c.header...)
		if code != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.status)
		}
		if strings.HasPrefix(c.name, "a listed origin") && hdr.Get("Access-Control-Allow-Origin") != "https://app.example" {
			t.Errorf("%s: Access-Control-Allow-Origin %q, want the origin", c.name, hdr.Get("Access-Control-Allow-Origin"))
		}
	}
}

// setBodyType gives a request with a body the Content-Type its route
// takes: a plugin push's (POST /v1/indexes/{index}/plugins/{name}) a
// module's, any other JSON's (the NDJSON routes take it too).
func setBodyType(req *http.Request, body string) {
	segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case body == "":
	case req.Method == "POST" && len(segs) == 5 && segs[3] == "plugins":
		req.Header.Set("Content-Type", "application/wasm")
	default:
		req.Header.Set("Content-Type", "application/json")
	}
}
