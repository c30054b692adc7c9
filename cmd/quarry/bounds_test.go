package main

import (
	"strings"
	"testing"
)

// index create takes an index's document limits; put is held to
// them, and the refusal names the limit and the document.
func TestCLIIndexDocumentLimits(t *testing.T) {
	t.Parallel()
	url, _ := cluster(t, false)
	nf := []string{"--nats", url}
	if out, errOut, code := cli(t, "", append([]string{"index", "create", "tiny", "--max-doc-fields", "3", "--max-doc-depth", "2", "--max-index-fields", "4"}, nf...)...); code != 0 {
		t.Fatalf("index create: %d %s %s", code, out, errOut)
	}
	out, errOut, code := cli(t, "", append([]string{"index", "show", "tiny"}, nf...)...)
	if code != 0 || !strings.Contains(out, `"documents": {`) || !strings.Contains(out, `"max_index_fields": 4`) {
		t.Errorf("index show: %d %s %s", code, out, errOut)
	}
	cases := []struct{ doc, want string }{
		{`{"id":"a","b":1,"c":2}`, "stored at sequence"},
		{`{"id":"w","b":1,"c":2,"d":3}`, `document "w" has more than 3 fields`},
		{`{"id":"d","b":{"c":[1]}}`, `document "d" nests deeper than 2 levels`},
		{`{"id":"e","e":1}`, "stored at sequence"}, // the 4th field
		{`{"id":"f","f":1}`, `document "f" would take index "tiny" to at least 5 fields (it has 4; the document adds 1, "f" among them), over its limit of 4 (documents.max_index_fields)`},
	}
	for _, tc := range cases {
		out, errOut, _ := cli(t, tc.doc, append([]string{"put", "tiny", "-"}, nf...)...)
		if !strings.Contains(out+errOut, tc.want) {
			t.Errorf("put %s: %s %s, want %q", tc.doc, out, errOut, tc.want)
		}
	}
	if _, errOut, code := cli(t, "", append([]string{"index", "create", "huge", "--max-doc-depth", "101"}, nf...)...); code == 0 || !strings.Contains(errOut, "documents.max_depth must be between 0 (the default) and 100, got 101") {
		t.Errorf("index create over a ceiling: %d %s", code, errOut)
	}
}
