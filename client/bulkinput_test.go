package client

import (
	"bytes"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

// FuzzBulkInput: whatever the input, each format's reader ends, never
// hands on an entry over the document limit, and an ES document it gives
// an id to keeps the action's _id (the document then parses with that id,
// or is refused).
func FuzzBulkInput(f *testing.F) {
	f.Add([]byte(`{"id":"a"}`+"\n"+`{"id":"b"}`), false)
	f.Add([]byte(` [{"id":"a"},{"id":7},1]`), false)
	f.Add([]byte(`{"index":{"_id":"x"}}`+"\n"+`{"n":1}`+"\n"+`{"delete":{"_id":"y"}}`+"\n"+`{"update":{}}`), true)
	f.Add([]byte(`{"create":{"_id":"x"}}`+"\n"+`{ }`), true)
	f.Fuzz(func(t *testing.T, data []byte, es bool) {
		const max = 256
		format := FormatNDJSON
		if es {
			format = FormatES
		}
		in, err := newBulkInput(bytes.NewReader(data), format, max)
		if err != nil {
			return
		}
		for range len(data) + 2 {
			it, ok, err := in.next()
			if !ok || err != nil {
				return
			}
			if it.err != nil {
				continue
			}
			if len(it.doc) > max+len(`{"id":,`)+2*max {
				t.Fatalf("entry %d of %d bytes", it.line, len(it.doc))
			}
			if it.del != "" && it.doc != nil {
				t.Fatalf("entry %d both deletes and writes", it.line)
			}
			if es && it.doc != nil && strings.HasPrefix(string(it.doc), `{"id":`) {
				if _, err := api.ParseDocument(it.doc, 1<<20, api.DocumentLimits{}); err != nil && strings.Contains(err.Error(), "duplicate field") {
					t.Fatalf("entry %d got a second id: %s", it.line, it.doc)
				}
			}
		}
		t.Fatalf("more entries than bytes in %q", data)
	})
}
