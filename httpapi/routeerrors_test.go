package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The router's own answers are the API's JSON errors: 405 for a method a
// path has no route for (its Allow header kept), 404 for a path no route
// has (GET …/search answered a plain-text 405).
func TestRouteErrorsAreJSON(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/indexes/{index}/search", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	srv := httptest.NewServer(Strict(mux))
	defer srv.Close()
	for _, c := range []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{"GET", "/v1/indexes/menu/search", 405, "method_not_allowed", "POST"},
		{"GET", "/v1/nothing", 404, "not_found", ""},
		{"POST", "/v1/indexes/menu/search", 204, "", ""},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct{ Code, Message string }
		}
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != c.status || body.Error.Code != c.code || resp.Header.Get("Allow") != c.allow ||
			(c.code != "" && resp.Header.Get("Content-Type") != "application/json") {
			t.Errorf("%s %s: %d %s %+v (Allow %q), want %d %s", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"), body, resp.Header.Get("Allow"), c.status, c.code)
		}
	}
}
