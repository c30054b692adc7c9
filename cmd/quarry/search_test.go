package main

import (
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
}
