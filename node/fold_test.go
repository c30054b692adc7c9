package node

import (
	"bytes"
	"context"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

// A stranger's text comes composed and decomposed, in full-width letters,
// with ligatures: a new index folds them (NFKC, then lower case), so each
// spelling of a word finds the documents holding any other.
func TestUnicodeFolding(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "fold", 2, nil); err != nil {
		t.Fatal(err)
	}
	body := bytes.NewBufferString(`{"id":"nfd","name":"Cafe\u0301 noir"}
{"id":"nfc","name":"CAFÉ crème"}
{"id":"wide","name":"ｐｉｚｚａ margherita"}
{"id":"liga","name":"ﬁsh and chips"}
{"id":"plain","name":"pizza bianca"}
`)
	mustBulk(t, c, "fold", body)
	waitTotal(t, c, "fold", "bianca", 1)
	for q, want := range map[string][]string{
		"café":       {"nfc", "nfd"},
		"Cafe\u0301": {"nfc", "nfd"},
		"CAFE":       nil, // an accent is a letter: folding is not accent removal
		"pizza":      {"plain", "wide"},
		"ＰＩＺＺＡ":      {"plain", "wide"},
		"fish":       {"liga"},
		"ﬁsh":        {"liga"},
	} {
		res, err := c.Search(ctx, "fold", &api.SearchRequest{Q: q, Sort: []string{"_id"}})
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		var got []string
		for _, h := range res.Hits {
			got = append(got, h.ID)
		}
		if len(got) != len(want) || (len(want) > 0 && (got[0] != want[0] || got[len(got)-1] != want[len(want)-1])) {
			t.Errorf("%q found %v, want %v", q, got, want)
		}
	}
}
