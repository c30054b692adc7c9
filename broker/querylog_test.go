package broker

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/quarrysearch/quarry/api"
)

// The query log keeps each index's last searches, oldest first, and its
// last slow ones (21 here: the first goes) with their stages; a long text is cut, a query without
// q is named by its query, and a deleted index's log goes.
func TestQueryLog(t *testing.T) {
	var l queryLog
	for i := range queryLogSize + 5 {
		var times *stageTimes
		if i%50 == 0 {
			times = &stageTimes{stageDecode: time.Millisecond, stageFanOut: 3 * time.Millisecond}
		}
		l.add("menu", &api.SearchRequest{Q: fmt.Sprint("q", i)}, uint64(i%2), time.Duration(i)*time.Microsecond, times)
	}
	recent, slow := l.of("menu")
	if len(recent) != queryLogSize || recent[0].Q != "q5" || recent[len(recent)-1].Q != fmt.Sprint("q", queryLogSize+4) {
		t.Errorf("recent: %d, from %q to %q; want %d from q5", len(recent), recent[0].Q, recent[len(recent)-1].Q, queryLogSize)
	}
	if len(slow) != slowLogSize || slow[0].Q != "q50" || len(slow[0].Stages) != 2 || slow[0].Stages[1].Name != "fan_out" || slow[0].Stages[1].TookMS != 3 {
		t.Errorf("slow: %d, first %+v", len(slow), slow[0])
	}
	l.add("books", &api.SearchRequest{Q: strings.Repeat("x", 500)}, 0, 0, nil)
	l.add("books", &api.SearchRequest{Query: []byte(`{"match":"a"}`)}, 0, 0, nil)
	books, _ := l.of("books")
	if len(books) != 2 || len(books[0].Q) != queryLogText+len("…") || books[1].Q != `query: {"match":"a"}` {
		t.Errorf("books: %+v", books)
	}
	// A cut falls on a character's boundary: the log stays UTF-8.
	l.add("books", &api.SearchRequest{Q: "a" + strings.Repeat("é", 150)}, 0, 0, nil)
	books, _ = l.of("books")
	if q := books[2].Q; !utf8.ValidString(q) || len(q) != queryLogText-1+len("…") {
		t.Errorf("a cut text: %d bytes, valid UTF-8 %v", len(q), utf8.ValidString(q))
	}
	l.forget("books")
	if books, slow := l.of("books"); len(books) != 0 || len(slow) != 0 {
		t.Errorf("a forgotten index's log: %v %v", books, slow)
	}
}
