package plugins

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/sdk/abi"
)

// abiDoc is the ABI's documentation, whose worked example is checked here.
const abiDoc = "../docs/plugin-abi.md"

// docRankRequest is the worked example's rank request.
func docRankRequest() *abi.RankRequest {
	return &abi.RankRequest{Q: "noodles", Fields: []string{"rating", "tags"}, Candidates: []abi.Candidate{
		{ID: "d1", Score: 1.25, Values: []abi.Value{{Kind: abi.KindNumber, Num: 4.5},
			{Kind: abi.KindList, List: []abi.Value{{Kind: abi.KindString, Str: "spicy"}}}}},
		{ID: "d7", Score: 2, Values: []abi.Value{{Kind: abi.KindMissing}, {Kind: abi.KindMissing}}},
	}}
}

// docRankResponse is the worked example's answer: score + 0.5 × rating,
// sorted by the host.
func docRankResponse() *abi.RankResponse {
	return &abi.RankResponse{Flags: abi.RankSortByScore, Ranked: []abi.Ranked{{Index: 0, Score: 3.5}, {Index: 1, Score: 2}}}
}

// docExample reads the bytes of the documentation's table after the
// marker <!-- abi-example: NAME -->: rows of offset | `hex bytes` |
// meaning, each offset the count of the bytes before it.
func docExample(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(abiDoc)
	if err != nil {
		t.Fatal(err)
	}
	marker := "<!-- abi-example: " + name + " -->"
	_, table, ok := strings.Cut(string(raw), marker+"\n")
	if !ok {
		t.Fatalf("%s: no %q", abiDoc, marker)
	}
	var out []byte
	for i, line := range strings.Split(table, "\n") {
		if i < 2 { // the header and the delimiter row
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			t.Fatalf("%s, %s: row %q has no offset, bytes and meaning", abiDoc, name, line)
		}
		off, err := strconv.Atoi(strings.TrimSpace(cells[1]))
		if err != nil || off != len(out) {
			t.Fatalf("%s, %s: row %q: offset %q, want %d", abiDoc, name, line, cells[1], len(out))
		}
		b, err := hex.DecodeString(strings.ReplaceAll(strings.Trim(strings.TrimSpace(cells[2]), "`"), " ", ""))
		if err != nil || len(b) == 0 {
			t.Fatalf("%s, %s: row %q: bytes %q: %v", abiDoc, name, line, cells[2], err)
		}
		out = append(out, b...)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no rows after %q", abiDoc, marker)
	}
	return out
}

// rows writes b as 16 bytes a line, for fixing the documentation.
func rows(b []byte) string {
	var s strings.Builder
	for i := 0; i < len(b); i += 16 {
		fmt.Fprintf(&s, "%4d  % x\n", i, b[i:min(i+16, len(b))])
	}
	return s.String()
}

// The documentation's worked example is what the encoder writes, so the
// two cannot drift apart.
func TestABIDocExample(t *testing.T) {
	req := abi.AppendRankRequest(nil, docRankRequest())
	if doc := docExample(t, "rank request"); !bytes.Equal(doc, req) {
		t.Errorf("%s: the rank request's %d bytes differ from the encoder's %d:\ndoc:\n%sencoder:\n%s", abiDoc, len(doc), len(req), rows(doc), rows(req))
	}
	resp := abi.AppendRankResponse(nil, docRankResponse())
	doc := docExample(t, "rank response")
	if !bytes.Equal(doc, resp) {
		t.Errorf("%s: the rank response's %d bytes differ from the encoder's %d:\ndoc:\n%sencoder:\n%s", abiDoc, len(doc), len(resp), rows(doc), rows(resp))
	}
	var got abi.RankResponse
	if err := abi.DecodeRankResponse(doc, len(docRankRequest().Candidates), &got); err != nil {
		t.Fatalf("%s: the example response is refused: %v", abiDoc, err)
	}
	if want := docRankResponse(); !reflect.DeepEqual(got.Ranked, want.Ranked) {
		t.Fatalf("%s: the example response decodes to %+v, want %+v", abiDoc, got.Ranked, want.Ranked)
	}
}
