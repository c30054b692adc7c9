package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

// index create says which shard count it took, and that it was the
// default when --shards was not given.
func TestCLIIndexCreateSaysShards(t *testing.T) {
	t.Parallel()
	url, _ := cluster(t, false)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"dishes"}, "created index dishes with 1 shard (the default; --shards N for more)\n"},
		{[]string{"one", "--shards", "1"}, "created index one with 1 shard\n"},
		{[]string{"four", "--shards", "4"}, "created index four with 4 shards\n"},
	}
	for _, tc := range cases {
		out, errOut, code := cli(t, "", append(append([]string{"index", "create"}, tc.args...), "--nats", url)...)
		if code != 0 || out != tc.want {
			t.Errorf("index create %s: %d %q %s, want %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
	// An index made without --team is a team of its own, named as the
	// plugins, judgements and tokens name it: index-<name>, not "-".
	_, out := lsDocs(t, url, "dishes")
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "dishes" && f[1] != "index-dishes" {
			t.Errorf("index ls shows the team of dishes as %q, want index-dishes:\n%s", f[1], out)
		}
	}
}

// lsDocs runs index ls and returns the DOCS column of index's row, and
// the whole output.
func lsDocs(t *testing.T, url, index string) (string, string) {
	t.Helper()
	out, errOut, code := cli(t, "", "index", "ls", "--nats", url)
	if code != 0 {
		t.Fatalf("index ls: %d %s %s", code, out, errOut)
	}
	lines := strings.Split(out, "\n")
	col := strings.Index(lines[0], "DOCS")
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 0 && f[0] == index && col >= 0 && col < len(l) {
			return strings.Fields(l[col:])[0], out
		}
	}
	t.Fatalf("index ls has no row for %s:\n%s", index, out)
	return "", ""
}

// index ls (and index show) count the documents searches see now, not
// those of the last snapshot; with no searcher it falls back to the
// snapshot's count and says so.
func TestCLIIndexLsLiveDocs(t *testing.T) {
	t.Parallel()
	url, c := cluster(t, true)
	nf := []string{"--nats", url}
	if out, errOut, code := cli(t, "", append([]string{"index", "create", "dishes", "--shards", "2"}, nf...)...); code != 0 {
		t.Fatalf("index create: %d %s %s", code, out, errOut)
	}
	var docs strings.Builder
	for _, id := range []string{"d1", "d2", "d3", "d4", "d5"} {
		docs.WriteString(`{"id":"` + id + `","name":"dish"}` + "\n")
	}
	if out, errOut, code := cli(t, docs.String(), append([]string{"ingest", "dishes", "-"}, nf...)...); code != 0 || !strings.Contains(out, "published generation 1: 5 docs") {
		t.Fatalf("ingest: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := cli(t, "", append([]string{"delete", "dishes", "d1"}, nf...)...); code != 0 {
		t.Fatalf("delete: %d %s %s", code, out, errOut)
	}
	waitTotalOf(t, c, "dishes", &api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`), Size: api.NoHits}, 4)
	if got, out := lsDocs(t, url, "dishes"); got != "4" {
		t.Errorf("index ls after a delete: DOCS %s, want 4 (the snapshot has 5)\n%s", got, out)
	}
	out, errOut, code := cli(t, "", append([]string{"index", "show", "dishes"}, nf...)...)
	var st struct {
		Docs         uint64 `json:"docs"`
		DocsFrom     string `json:"docs_from"`
		SnapshotDocs uint64 `json:"snapshot_docs"`
	}
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.Docs != 4 || st.DocsFrom != "searchers" || st.SnapshotDocs != 5 {
		t.Errorf("index show: %d %s %s (%v)", code, out, errOut, err)
	}

	// No searcher: the snapshot's count, marked, and why.
	url2, c2 := cluster(t, false)
	if _, err := c2.CreateIndex(t.Context(), "dishes", 2, nil); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := cli(t, docs.String(), "ingest", "dishes", "-", "--nats", url2); code != 0 {
		t.Fatalf("ingest: %d %s %s", code, out, errOut)
	}
	got, out := lsDocs(t, url2, "dishes")
	if got != "5*" || !strings.Contains(out, "* the last snapshot's count") || !strings.Contains(out, "dishes: no searcher serves shard") {
		t.Errorf("index ls with no searcher: DOCS %s, want 5* and a note\n%s", got, out)
	}
}
