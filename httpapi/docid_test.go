package httpapi

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

// FuzzDocID: whatever the query string and the path's id, docID either
// names exactly one non-empty id — the path's, or the one id parameter of
// a path without one — or refuses with a bad request; it never panics.
func FuzzDocID(f *testing.F) {
	for _, seed := range [][2]string{
		{"", "id=a%2Fb"}, {"", "id=.."}, {"", "id=a&id=b"}, {"", "ids=a"}, {"", "id="}, {"", "id=%zz"},
		{"", ""}, {"x1", ""}, {"x1", "id=x2"}, {"", "id=https%3A%2F%2Fexample.com%2Fa"}, {"", "id=a;b"}, {"", "id=%00"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pathID, rawQuery string) {
		r := &http.Request{Method: "GET", URL: &url.URL{Path: "/v1/indexes/i/documents", RawQuery: rawQuery}}
		r.SetPathValue("index", "i")
		if pathID != "" {
			r.SetPathValue("id", pathID)
		}
		id, err := docID(r)
		if err != nil {
			if api.CodeOf(err) != api.CodeBadRequest {
				t.Fatalf("docID(%q, %q): %v, want a bad request", pathID, rawQuery, err)
			}
			return
		}
		if id == "" {
			t.Fatalf("docID(%q, %q) named an empty id", pathID, rawQuery)
		}
		if pathID != "" {
			if id != pathID || rawQuery != "" {
				t.Fatalf("docID(%q, %q) = %q: a path's id, and no query", pathID, rawQuery, id)
			}
			return
		}
		q, perr := url.ParseQuery(rawQuery)
		if perr != nil || len(q) != 1 || len(q["id"]) != 1 || q["id"][0] != id {
			t.Fatalf("docID(%q) = %q, but the query is %v (%v)", rawQuery, id, q, perr)
		}
	})
}
