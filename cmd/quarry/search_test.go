package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

// quarry search prints the fields asked for, whatever the index's field
// names (not only the demo's), and the sort values.
func TestCLISearchPrintsFields(t *testing.T) {
	t.Parallel()
	url, c := cluster(t, true)
	nf := []string{"--nats", url}
	if out, errOut, code := cli(t, "", append([]string{"index", "create", "parts"}, nf...)...); code != 0 {
		t.Fatalf("index create: %d %s %s", code, out, errOut)
	}
	docs := `{"id":"p1","title":"Widget","color":"red","weight":3,"sizes":["s","m"],"dims":{"w":2}}
{"id":"p2","title":"Gadget","color":"blue","weight":12.5,"sizes":["l"],"dims":{"w":5}}
`
	if out, errOut, code := cli(t, docs, append([]string{"ingest", "parts", "-"}, nf...)...); code != 0 {
		t.Fatalf("ingest: %d %s %s", code, out, errOut)
	}
	waitTotalOf(t, c, "parts", &api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`), Size: api.NoHits}, 2)
	cases := []struct {
		name string
		args []string
		want []string // lines, in order
	}{
		{"fields asked, in their order", []string{"--fields", "weight,color", "--sort", "-weight"},
			[]string{"p2  ", "weight=12.5  color=blue  sort=12.5", "p1  ", "weight=3  color=red  sort=3"}},
		{"every field, by name, the title on the first line", []string{"--sort", "weight"},
			[]string{"p1  Widget", "color=red  dims.w=2  sizes=s,m  weight=3  sort=3", "p2  Gadget", "color=blue  dims.w=5  sizes=l  weight=12.5  sort=12.5"}},
		{"no fields", []string{"--fields", "", "--sort", "_id"}, []string{"p1  ", "sort=p1", "p2  ", "sort=p2"}},
		{"highlighted", []string{"gadget", "--fields", "", "--highlight", "title,color"}, []string{"p2  ", "title: [Gadget]"}},
		{"a page and its cursor", []string{"--fields", "", "--sort", "weight", "--size", "1"}, []string{"p1  ", "next: "}},
		{"with typos", []string{"gadgt", "--fields", "", "--typos", "on"}, []string{"p2  "}},
		{"without typos", []string{"gadgt", "--fields", "", "--typos", "off"}, []string{"0 hits"}},
		{"as you type", []string{"gadg", "--fields", "", "--prefix", "on"}, []string{"p2  "}},
		{"suggestions alone", []string{"ga", "--size", "0", "--suggest", "title"}, []string{"0 hits", "suggestions: gadget (1)"}},
		{"suggestions within typos", []string{"gadgit", "--fields", "", "--suggest", "title", "--suggest-typos"}, []string{"suggestions: gadget (1)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := cli(t, "", append(append([]string{"search", "parts"}, tc.args...), nf...)...)
			if code != 0 {
				t.Fatalf("search: %d %s %s", code, out, errOut)
			}
			rest := out
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("search %s: no %q (in order) in\n%s", strings.Join(tc.args, " "), w, out)
				}
				rest = rest[i+len(w):]
			}
		})
	}
	if _, errOut, code := cli(t, "", append([]string{"search", "parts", "x", "--typos", "maybe"}, nf...)...); code != 2 || !strings.Contains(errOut, `--typos "maybe": want on or off`) {
		t.Errorf("--typos maybe: %d %s", code, errOut)
	}
	// The printed cursor gives the page after.
	out, _, _ := cli(t, "", append([]string{"search", "parts", "--fields", "", "--sort", "weight", "--size", "1"}, nf...)...)
	_, next, ok := strings.Cut(out, "next: ")
	next, _, _ = strings.Cut(next, " ")
	if !ok || next == "" {
		t.Fatalf("no cursor in\n%s", out)
	}
	if out, errOut, code := cli(t, "", append([]string{"search", "parts", "--fields", "", "--sort", "weight", "--size", "1", "--after", next}, nf...)...); code != 0 || !strings.Contains(out, "p2  ") || strings.Contains(out, "p1  ") {
		t.Fatalf("--after the cursor: %d %s %s", code, out, errOut)
	}
	// A point in time: the printed name reads the same moment.
	out, _, _ = cli(t, "", append([]string{"search", "parts", "--fields", "", "--sort", "weight", "--size", "1", "--pit", "1m"}, nf...)...)
	_, pit, ok := strings.Cut(out, "pit: ")
	pit, _, _ = strings.Cut(pit, " ")
	_, next, _ = strings.Cut(out, "next: ")
	next, _, _ = strings.Cut(next, " ")
	if !ok || pit == "" {
		t.Fatalf("no point in time in\n%s", out)
	}
	if out, errOut, code := cli(t, "", append([]string{"search", "parts", "--fields", "", "--sort", "weight", "--size", "1", "--after", next, "--pit-id", pit}, nf...)...); code != 0 || !strings.Contains(out, "p2  ") || !strings.Contains(out, "pit: "+pit) {
		t.Fatalf("--pit-id: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := cli(t, "", append([]string{"search", "parts", "--fields", "", "--size", "1", "--pit-id", pit, "--pit-close"}, nf...)...); code != 0 || strings.Contains(out, "pit: ") {
		t.Fatalf("--pit-close: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := cli(t, "", append([]string{"search", "parts", "--size", "1", "--pit-id", pit}, nf...)...); code == 0 || !strings.Contains(errOut, "expired or ended") {
		t.Fatalf("--pit-id of a closed point in time: %d %s", code, errOut)
	}
	if _, errOut, code := cli(t, "", append([]string{"search", "parts", "--sort", "weight", "--pit", "forever"}, nf...)...); code != 2 || !strings.Contains(errOut, `pit.keep_alive "forever" is no duration`) {
		t.Errorf("--pit forever: %d %s", code, errOut)
	}
}

// quarry delete-by-query counts with --dry-run and deletes what the
// query finds, saying how many; a query naming nothing exits 2.
func TestCLIDeleteByQuery(t *testing.T) {
	t.Parallel()
	url, c := cluster(t, true)
	nf := []string{"--nats", url}
	if _, err := c.CreateIndex(context.Background(), "dq", 2, nil); err != nil {
		t.Fatal(err)
	}
	docs := `{"id":"a","color":"red"}
{"id":"b","color":"red"}
{"id":"c","color":"blue"}
`
	if out, errOut, code := cli(t, docs, append([]string{"ingest", "dq", "-", "--wait"}, nf...)...); code != 0 {
		t.Fatalf("ingest: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := cli(t, "", append([]string{"delete-by-query", "dq", "red", "--dry-run"}, nf...)...); code != 0 || out != "2 documents match; none deleted (--dry-run)\n" {
		t.Fatalf("--dry-run: %d %q %s", code, out, errOut)
	}
	if out, errOut, code := cli(t, "", append([]string{"delete-by-query", "dq", "red"}, nf...)...); code != 0 || !strings.HasPrefix(out, "deleted 2 documents (last at sequence ") {
		t.Fatalf("delete-by-query: %d %q %s", code, out, errOut)
	}
	if out, errOut, code := cli(t, "", append([]string{"delete-by-query", "dq"}, nf...)...); code != 2 || !strings.Contains(errOut, "give q, query or filter") {
		t.Fatalf("delete-by-query without a query: %d %q %s", code, out, errOut)
	}
	if r, err := c.Search(context.Background(), "dq", &api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`), Size: api.NoHits}); err != nil || r.Total != 1 {
		t.Fatalf("left: %v %v, want the blue one", r, err)
	}
}
