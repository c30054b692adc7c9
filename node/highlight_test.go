package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

// TestHighlight: a search that asks for highlighting gets each hit's best
// fragment of each named field with the query's terms marked, HTML-escaped
// unless asked otherwise, with the request's tags, over NATS and HTTP and
// over several shards; a field without a match is absent; what is over
// its bounds is refused before any shard is asked.
func TestHighlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := startNode(t)
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "hl", 3, nil); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("filler words here ", 30)
	mustBulk(t, c, "hl", bytes.NewBufferString(`{"id":"1","name":"Pad Thai <b>& co</b>","text":"rice noodles with peanuts"}
{"id":"2","name":"Drunken noodles","text":"`+long+`wide rice noodles, basil and chili `+long+`"}
{"id":"3","name":"Green curry","text":"coconut and basil"}
`))

	r, err := c.Search(ctx, "hl", &api.SearchRequest{Q: "pad thai noodles", Highlight: &api.HighlightRequest{Fields: []string{"name", "text"}}})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]api.Hit{}
	for _, h := range r.Hits {
		byID[h.ID] = h
	}
	if got := byID["1"].Highlight["name"]; len(got) != 1 || got[0] != "<mark>Pad</mark> <mark>Thai</mark> &lt;b&gt;&amp; co&lt;/b&gt;" {
		t.Errorf("hit 1's name: %q", got)
	}
	if got := byID["1"].Highlight["text"]; len(got) != 1 || got[0] != "rice <mark>noodles</mark> with peanuts" {
		t.Errorf("hit 1's text: %q", got)
	}
	// A long field: the fragment around the match, cut on both sides.
	if got := byID["2"].Highlight["text"]; len(got) != 1 || !strings.HasPrefix(got[0], "…") || !strings.HasSuffix(got[0], "…") ||
		!strings.Contains(got[0], "wide rice <mark>noodles</mark>, basil") || len(got[0]) > 400 {
		t.Errorf("hit 2's long text: %q", got)
	}
	if _, ok := byID["2"].Highlight["name"]; !ok {
		t.Errorf("hit 2's name matched noodles: %v", byID["2"].Highlight)
	}
	if h, ok := byID["3"]; ok {
		t.Errorf("hit 3 matches none of the terms: %+v", h)
	}
	if byID["1"].Fields != nil {
		t.Errorf("hit 1 has fields %v: only highlights were asked for", byID["1"].Fields)
	}

	// Tags and no escaping, over HTTP.
	body := `{"q":"pad","fields":["name"],"highlight":{"fields":["name"],"pre_tag":"[","post_tag":"]","encoder":"none"}}`
	resp, err := http.Post("http://"+n.HTTPAddr+"/v1/indexes/hl/search", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var hr struct {
		Hits []struct {
			ID        string              `json:"id"`
			Fields    map[string]any      `json:"fields"`
			Highlight map[string][]string `json:"highlight"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(raw, &hr); err != nil || resp.StatusCode != 200 || len(hr.Hits) != 1 {
		t.Fatalf("HTTP search: %d %s %v", resp.StatusCode, raw, err)
	}
	if got := hr.Hits[0].Highlight["name"]; len(got) != 1 || got[0] != "[Pad] Thai <b>& co</b>" || hr.Hits[0].Fields["name"] != "Pad Thai <b>& co</b>" {
		t.Fatalf("HTTP hit: %s", raw)
	}

	// The tags as written in the JSON, not \u003cmark\u003e.
	resp, err = http.Post("http://"+n.HTTPAddr+"/v1/indexes/hl/search", "application/json", strings.NewReader(`{"q":"pad","highlight":{"fields":["name"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(raw), `"highlight":{"name":["<mark>Pad</mark> Thai &lt;b&gt;&amp; co&lt;/b&gt;"]}`) {
		t.Fatalf("HTTP hit with the default tags: %s", raw)
	}

	refused := []struct {
		name string
		req  api.SearchRequest
		is   error
		msg  string
	}{
		{"no fields", api.SearchRequest{Q: "pad", Highlight: &api.HighlightRequest{}}, api.ErrBadRequest, "highlight.fields"},
		{"17 fields", api.SearchRequest{Q: "pad", Highlight: &api.HighlightRequest{Fields: strings.Split(strings.Repeat("f,", 17)[:33], ",")}}, api.ErrBadRequest, "1 to 16"},
		{"an empty field", api.SearchRequest{Q: "pad", Highlight: &api.HighlightRequest{Fields: []string{"name", ""}}}, api.ErrBadRequest, "highlight.fields[1] is empty"},
		{"a bad encoder", api.SearchRequest{Q: "pad", Highlight: &api.HighlightRequest{Fields: []string{"name"}, Encoder: "xml"}}, api.ErrBadRequest, "encoder"},
		{"a long tag", api.SearchRequest{Q: "pad", Highlight: &api.HighlightRequest{Fields: []string{"name"}, PreTag: strings.Repeat("x", 65)}}, api.ErrBadRequest, "at most 64 bytes"},
		{"a deep page", api.SearchRequest{Q: "pad", From: 995, Size: 10, Highlight: &api.HighlightRequest{Fields: []string{"name"}}}, api.ErrQueryTooComplex, "over the 1000 hits"},
	}
	for _, tc := range refused {
		if _, err := c.Search(ctx, "hl", &tc.req); !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %v saying %q", tc.name, err, tc.is, tc.msg)
		}
	}
}
