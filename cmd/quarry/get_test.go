package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// quarry get prints a document as it was written, with no searcher
// running; unknown ids and indexes and deleted documents exit 2 with a
// message naming what is missing.
func TestCLIGet(t *testing.T) {
	t.Parallel()
	url, c := cluster(t, false)
	if _, err := c.CreateIndex(context.Background(), "dishes", 2, nil); err != nil {
		t.Fatal(err)
	}
	nf := []string{"--nats", url}
	doc := `{"id":"d1","name":"Pad Thai","price":9.5}`
	if out, errOut, code := cli(t, doc+"\n", append([]string{"put", "dishes", "-"}, nf...)...); code != 0 {
		t.Fatalf("put: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := cli(t, "", append([]string{"put", "dishes", "-"}, nf...)...); code != 2 {
		t.Fatalf("put of nothing: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := cli(t, `{"id":"gone"}`, append([]string{"put", "dishes", "-"}, nf...)...); code != 0 {
		t.Fatalf("put: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := cli(t, "", append([]string{"delete", "dishes", "gone"}, nf...)...); code != 0 {
		t.Fatalf("delete: %d %s %s", code, out, errOut)
	}

	out, errOut, code := cli(t, "", append([]string{"get", "dishes", "d1"}, nf...)...)
	if code != 0 || out != doc+"\n" {
		t.Fatalf("get d1: %d %q %s, want %q", code, out, errOut, doc+"\n")
	}
	out, errOut, code = cli(t, "", append([]string{"get", "--json", "dishes", "d1"}, nf...)...)
	var got struct {
		Index, ID string
		Seq       uint64
		Source    json.RawMessage
	}
	err := json.Unmarshal([]byte(out), &got)
	var src bytes.Buffer
	json.Compact(&src, got.Source)
	if code != 0 || err != nil || got.ID != "d1" || got.Index != "dishes" || got.Seq == 0 || src.String() != doc {
		t.Fatalf("get --json: %d %s %s (%v)", code, out, errOut, err)
	}
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"unknown id", []string{"dishes", "nope"}, 2, `document "nope" does not exist in index "dishes"`},
		{"deleted", []string{"dishes", "gone"}, 2, `document "gone" of index "dishes" was deleted`},
		{"unknown index", []string{"nosuch", "d1"}, 2, `index "nosuch" does not exist`},
		{"no id", []string{"dishes"}, 2, "wrong number of arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := cli(t, "", append(append([]string{"get"}, tc.args...), nf...)...)
			if code != tc.code || out != "" || !strings.Contains(errOut, tc.msg) {
				t.Errorf("get %s: %d %q %q, want %d and %q", strings.Join(tc.args, " "), code, out, errOut, tc.code, tc.msg)
			}
		})
	}
	if out, errOut, code := cli(t, "", "get", "--help"); code != 0 || !strings.Contains(out, "Usage:\n  quarry get INDEX ID [flags]") || !strings.Contains(out, "source of truth") {
		t.Errorf("get --help: %d %s %s", code, out, errOut)
	}
	if out, _, _ := cli(t, "", "--help"); !regexp.MustCompile(`(?m)^\s+get\s+print one document by id`).MatchString(out) {
		t.Errorf("quarry --help does not list get:\n%s", out)
	}
}

// quarry patch changes part of a document (a JSON merge patch); with
// --if-seq a version since replaced is a conflict (exit 1) and nothing
// changes; a patch that is no object exits 2.
func TestCLIPatch(t *testing.T) {
	t.Parallel()
	url, c := cluster(t, false)
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "dishes", 2, nil); err != nil {
		t.Fatal(err)
	}
	nf := []string{"--nats", url}
	seq, err := c.Put(ctx, "dishes", []byte(`{"id":"d1","name":"Pad Thai","price":9.5,"tags":["noodles"]}`))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cli(t, `{"price":8.5,"tags":null}`, append([]string{"patch", "dishes", "d1", "-"}, nf...)...)
	if code != 0 || !strings.HasPrefix(out, "stored at sequence ") {
		t.Fatalf("patch: %d %q %s", code, out, errOut)
	}
	if out, errOut, code := cli(t, `{"price":1}`, append([]string{"patch", "--if-seq", strconv.FormatUint(seq, 10), "dishes", "d1", "-"}, nf...)...); code != 1 || !strings.Contains(errOut, "conflict") && !strings.Contains(errOut, "changed since") {
		t.Fatalf("patch --if-seq of a replaced version: %d %q %s, want exit 1 and a conflict", code, out, errOut)
	}
	if out, errOut, code := cli(t, `[1]`, append([]string{"patch", "dishes", "d1", "-"}, nf...)...); code != 2 || !strings.Contains(errOut, "must be a JSON object") {
		t.Fatalf("patch with an array: %d %q %s, want exit 2", code, out, errOut)
	}
	if out, _, _ := cli(t, "", append([]string{"get", "dishes", "d1"}, nf...)...); out != `{"id":"d1","name":"Pad Thai","price":8.5}`+"\n" {
		t.Fatalf("after the patches: %q", out)
	}
}
