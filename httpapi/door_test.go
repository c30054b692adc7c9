package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The door answers the names and origins it should and refuses, with
// 403 naming the flag, a Host the server is not (DNS rebinding) and a
// page of another origin; allowed origins get CORS headers.
func TestDoor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		cfg     DoorConfig
		method  string
		host    string
		origin  string
		want    int
		wantMsg string // in the body, for refusals
		cors    string // Access-Control-Allow-Origin wanted
	}{
		{name: "loopback: 127.0.0.1", cfg: DoorConfig{Loopback: true}, host: "127.0.0.1:7700", want: 200},
		{name: "loopback: localhost, any port", cfg: DoorConfig{Loopback: true}, host: "LocalHost:9", want: 200},
		{name: "loopback: [::1]", cfg: DoorConfig{Loopback: true}, host: "[::1]:7700", want: 200},
		{name: "loopback: no port", cfg: DoorConfig{Loopback: true}, host: "localhost", want: 200},
		{name: "loopback: rebinding", cfg: DoorConfig{Loopback: true}, host: "rebind.evil.example:7700", want: 403, wantMsg: "--http-hosts"},
		{name: "loopback: another address", cfg: DoorConfig{Loopback: true}, host: "10.1.2.3:7700", want: 403, wantMsg: "DNS rebinding"},
		{name: "loopback: 0.0.0.0", cfg: DoorConfig{Loopback: true}, host: "0.0.0.0:7700", want: 403},
		{name: "loopback: an allowed name", cfg: DoorConfig{Loopback: true, Hosts: []string{"Quarry.Local"}}, host: "quarry.local:7700", want: 200},
		{name: "routable, no list: any name", cfg: DoorConfig{}, host: "search.example.com", want: 200},
		{name: "routable, a list: listed", cfg: DoorConfig{Hosts: []string{"search.example.com"}}, host: "search.example.com:443", want: 200},
		{name: "routable, a list: an IP address", cfg: DoorConfig{Hosts: []string{"search.example.com"}}, host: "10.0.0.5:7700", want: 200},
		{name: "routable, a list: another name", cfg: DoorConfig{Hosts: []string{"search.example.com"}}, host: "rebind.evil.example", want: 403, wantMsg: "--http-hosts"},
		{name: "same origin", cfg: DoorConfig{Loopback: true}, method: "POST", host: "127.0.0.1:7700", origin: "http://127.0.0.1:7700", want: 200},
		{name: "another origin", cfg: DoorConfig{Loopback: true}, method: "POST", host: "127.0.0.1:7700", origin: "https://evil.example", want: 403, wantMsg: `https://evil.example`},
		{name: "another origin: the flag named", cfg: DoorConfig{Loopback: true}, method: "GET", host: "127.0.0.1:7700", origin: "http://localhost:7700", want: 403, wantMsg: "--http-origins"},
		{name: "another port", cfg: DoorConfig{Loopback: true}, method: "POST", host: "127.0.0.1:7700", origin: "http://127.0.0.1:8888", want: 403},
		{name: "an opaque origin", cfg: DoorConfig{Loopback: true}, method: "POST", host: "127.0.0.1:7700", origin: "null", want: 403},
		{name: "a listed origin", cfg: DoorConfig{Loopback: true, Origins: []string{"https://app.example:443/"}}, method: "POST", host: "127.0.0.1:7700", origin: "https://app.example", want: 200, cors: "https://app.example"},
		{name: "a listed origin's preflight", cfg: DoorConfig{Loopback: true, Origins: []string{"https://app.example"}}, method: "OPTIONS", host: "127.0.0.1:7700", origin: "https://app.example", want: 204, cors: "https://app.example"},
		{name: "no origin (curl, programs)", cfg: DoorConfig{Loopback: true, Origins: []string{"https://app.example"}}, method: "DELETE", host: "localhost:7700", want: 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := NewDoor(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			h := d.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "in") }))
			req := httptest.NewRequest(cmpOr(c.method, "GET"), "/v1/indexes", nil)
			req.Host = c.host
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			if c.method == "OPTIONS" {
				req.Header.Set("Access-Control-Request-Method", "POST")
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			body := w.Body.String()
			if w.Code != c.want || !strings.Contains(body, c.wantMsg) {
				t.Fatalf("%d %s, want %d with %q", w.Code, body, c.want, c.wantMsg)
			}
			if w.Code == 403 && (w.Header().Get("Connection") != "close" || !strings.Contains(body, `"forbidden"`)) {
				t.Fatalf("a refusal: Connection %q, body %s; want close and forbidden", w.Header().Get("Connection"), body)
			}
			if got := w.Header().Get("Access-Control-Allow-Origin"); got != c.cors {
				t.Fatalf("Access-Control-Allow-Origin %q, want %q", got, c.cors)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestDoorConfigChecked(t *testing.T) {
	t.Parallel()
	for _, o := range []string{"evil.example", "ftp://x", "https://x/path", "https://", "*", "https://u@x"} {
		if _, err := NewDoor(DoorConfig{Origins: []string{o}}); err == nil {
			t.Errorf("origin %q accepted", o)
		}
	}
	for _, h := range []string{"", "http://x", "a b"} {
		if _, err := NewDoor(DoorConfig{Hosts: []string{h}}); err == nil {
			t.Errorf("host %q accepted", h)
		}
	}
}

// A body must come with its route's Content-Type: a web page may send
// text/plain, a form or no type to another site without asking first
// (CORS), never application/json.
func TestBodyType(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, method, ctype string
		length              int64
		types               []string
		ok                  bool
	}{
		{"json", "POST", "application/json", 10, jsonBody, true},
		{"json with a charset", "PUT", "application/json; charset=utf-8", 10, jsonBody, true},
		{"json in capitals", "POST", "Application/JSON", 10, jsonBody, true},
		{"text/plain", "POST", "text/plain;charset=UTF-8", 10, jsonBody, false},
		{"a form", "POST", "application/x-www-form-urlencoded", 10, jsonBody, false},
		{"multipart", "POST", "multipart/form-data; boundary=x", 10, jsonBody, false},
		{"no type", "POST", "", 10, jsonBody, false},
		{"no type, length unknown", "POST", "", -1, jsonBody, false},
		{"a bad type", "POST", "application/json;;", 10, jsonBody, false},
		{"no body", "POST", "", 0, jsonBody, true},
		{"DELETE with a body", "DELETE", "text/plain", 3, jsonBody, false},
		{"GET", "GET", "text/plain", 3, jsonBody, true},
		{"ndjson", "POST", "application/x-ndjson", 10, ndjsonBody, true},
		{"json where ndjson", "POST", "application/json", 10, ndjsonBody, true},
		{"ndjson where json", "POST", "application/x-ndjson", 10, jsonBody, false},
		{"wasm", "POST", "application/wasm", 10, wasmBody, true},
		{"octet-stream", "POST", "application/octet-stream", 10, wasmBody, true},
		{"json where wasm", "POST", "application/json", 10, wasmBody, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, "/v1/indexes/a/search", strings.NewReader("0123456789"))
			r.ContentLength = c.length
			if c.ctype != "" {
				r.Header.Set("Content-Type", c.ctype)
			}
			err := bodyType(r, c.types)
			if (err == nil) != c.ok {
				t.Fatalf("bodyType: %v, want ok %v", err, c.ok)
			}
			if err != nil && (!strings.Contains(err.Error(), "-H 'Content-Type: "+c.types[0]+"'") || status(CodeUnsupportedMediaType) != 415) {
				t.Fatalf("%q does not say what to send", err)
			}
		})
	}
}
