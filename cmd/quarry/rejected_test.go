package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
)

// quarry index rejected lists the documents the stream acknowledged that
// the indexer could not apply (written to JetStream past the client), a
// row each, oldest first: sequence, shard, id, time, reason; --json
// prints them as JSON, --limit the last ones; an index with none says
// so; an unknown index exits 2.
func TestCLIIndexRejected(t *testing.T) {
	t.Parallel()
	url, c := cluster(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	def, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "dishes", Shards: 2, Documents: api.DocumentLimits{MaxFields: 3}})
	if err != nil {
		t.Fatal(err)
	}
	nf := []string{"--nats", url}
	if out, errOut, code := cli(t, "", append([]string{"index", "rejected", "dishes"}, nf...)...); code != 0 || out != "no rejected documents\n" {
		t.Fatalf("index rejected of an index with none: %d %q %s", code, out, errOut)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, d := range []struct{ id, doc string }{
		{"wide", `{"id":"wide","a":1,"b":2,"c":3}`},
		{"junk", `{"id":"junk",`},
	} { // straight into the stream, past the client
		ack, err := js.Publish(ctx, subject.Doc(def.Name, subject.ShardOf(d.id, def.Shards), d.id), []byte(d.doc))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ack.Sequence)
	}
	var out string
	waitFor(t, 30*time.Second, "index rejected to list both documents", func() (bool, string) {
		var errOut string
		var code int
		out, errOut, code = cli(t, "", append([]string{"index", "rejected", "dishes"}, nf...)...)
		return code == 0 && strings.Count(out, "\n") == 3, out + errOut
	})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !regexp.MustCompile(`^SEQ\s+SHARD\s+ID\s+TIME\s+REASON$`).MatchString(lines[0]) {
		t.Errorf("header %q", lines[0])
	}
	for i, want := range []struct {
		id, reason string
	}{{"wide", "over the index's limit of 3 (documents.max_fields)"}, {"junk", "malformed: invalid JSON"}} {
		row := regexp.MustCompile(fmt.Sprintf(`^%d\s+%d\s+%s\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+.*%s`,
			seqs[i], subject.ShardOf(want.id, def.Shards), want.id, regexp.QuoteMeta(want.reason)))
		if !row.MatchString(lines[i+1]) {
			t.Errorf("row %d: %q, want it to match %s", i+1, lines[i+1], row)
		}
	}
	out, errOut, code := cli(t, "", append([]string{"index", "rejected", "--json", "--limit", "1", "dishes"}, nf...)...)
	var docs []api.RejectedDocument
	if err := json.Unmarshal([]byte(out), &docs); code != 0 || err != nil || len(docs) != 1 || docs[0].ID != "junk" || docs[0].Seq != seqs[1] || docs[0].Index != "dishes" {
		t.Errorf("index rejected --json --limit 1: %d %s %s (%v)", code, out, errOut, err)
	}
	cases := []struct {
		name string
		args []string
		msg  string
	}{
		{"unknown index", []string{"nosuch"}, `index "nosuch" does not exist`},
		{"no index", []string{}, "wrong number of arguments"},
		{"negative limit", []string{"--limit", "-1", "dishes"}, "--limit must be 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := cli(t, "", append(append([]string{"index", "rejected"}, tc.args...), nf...)...)
			if code != 2 || out != "" || !strings.Contains(errOut, tc.msg) {
				t.Errorf("index rejected %s: %d %q %q, want 2 and %q", strings.Join(tc.args, " "), code, out, errOut, tc.msg)
			}
		})
	}
	if out, _, code := cli(t, "", "index", "rejected", "--help"); code != 0 || !strings.Contains(out, "Usage:\n  quarry index rejected NAME [flags]") || !strings.Contains(out, "could not apply") {
		t.Errorf("index rejected --help: %d %s", code, out)
	}
	if out, _, _ := cli(t, "", "index", "--help"); !regexp.MustCompile(`(?m)^  rejected +list the documents`).MatchString(out) {
		t.Errorf("quarry index --help does not list rejected:\n%s", out)
	}
}
