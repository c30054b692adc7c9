package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/backoff"
)

// PatchOptions configures Patch.
type PatchOptions struct {
	// IfSeq, if not 0, applies the patch only to the version of the
	// document stored at this stream sequence (Document.Seq, HTTP's
	// If-Match): if another write came since, Patch fails with an
	// error matching api.ErrConflict and writes nothing. With 0, Patch
	// reads the latest version and, if another write lands between its
	// read and its write, reads and applies again.
	IfSeq uint64
}

// patchAttempts bounds Patch's read-apply-write rounds when other writes
// keep landing on the document between its read and its write.
const patchAttempts = 16

// maxPatchDepth bounds the nesting of a patch's objects (the document's
// own depth is held to its index's documents.max_depth once merged).
const maxPatchDepth = 64

// Patch applies a JSON merge patch (RFC 7386: members set, objects
// merged, null removes a member) to one document and stores the result as
// its new version, held to the index's document limits like a Put; it
// returns the stream sequence that stores it. The read and the write are
// one atomic step against the stream: the write is stored only if the
// document's latest version is still the one read (JetStream's expected
// last subject sequence), so two concurrent patches never lose either's
// change. The patch must be a JSON object; an "id" in it must be the
// document's own. A missing or deleted document is an error matching
// api.ErrNotFound.
func (c *Client) Patch(ctx context.Context, index, id string, patch []byte, opts PatchOptions) (uint64, error) {
	if err := api.ValidDocumentID(id); err != nil {
		return 0, err
	}
	if len(patch) > c.opts.MaxDocBytes {
		return 0, api.BadRequest("patch is %d bytes, over the limit of %d", len(patch), c.opts.MaxDocBytes)
	}
	if !utf8.Valid(patch) {
		return 0, api.BadRequest("patch: not valid UTF-8")
	}
	p, isObject, err := members(patch, 0)
	if err != nil {
		return 0, api.BadRequest("patch: %v", err)
	}
	if !isObject {
		return 0, api.BadRequest("patch: a merge patch on a document must be a JSON object")
	}
	for _, m := range p {
		if m.key == "id" && !sameID(m.val, id) {
			return 0, api.BadRequest("patch: \"id\" is %s, not the document's %q: a patch cannot change a document's id", bytes.TrimSpace(m.val), id)
		}
	}
	pause := backoff.New(time.Millisecond, 50*time.Millisecond)
	for attempt := 1; ; attempt++ {
		doc, err := c.Get(ctx, index, id)
		if err != nil {
			return 0, err
		}
		if opts.IfSeq != 0 && doc.Seq != opts.IfSeq {
			return 0, api.Errorf(api.CodeConflict, "document %q of index %q is at stream sequence %d, not %d: it changed since (read it again and patch that)", id, index, doc.Seq, opts.IfSeq)
		}
		merged, err := mergePatch(doc.Source, patch, 0)
		if err != nil {
			return 0, api.BadRequest("patch: %v", err)
		}
		msg, err := c.docMsg(ctx, index, merged)
		if err != nil {
			return 0, err
		}
		msg.Header = nats.Header{}
		msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(doc.Seq, 10))
		ack, err := c.js.PublishMsg(ctx, msg)
		var apiErr *jetstream.APIError
		switch {
		case err == nil:
			return ack.Sequence, nil
		case !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence:
			return 0, c.publishErr(ctx, "publish patched document", err)
		case opts.IfSeq != 0:
			return 0, api.Errorf(api.CodeConflict, "document %q of index %q changed after stream sequence %d: not patched (read it again and patch that)", id, index, opts.IfSeq)
		case attempt == patchAttempts:
			return 0, api.Errorf(api.CodeConflict, "document %q of index %q changed under each of %d patches in a row: not patched", id, index, patchAttempts)
		}
		// Another write landed between the read and the write (or a
		// stream replica behind the leader answered the read): again.
		if err := pause.Wait(ctx); err != nil {
			return 0, err
		}
	}
}

// member is one member of a JSON object, its value as written.
type member struct {
	key string
	val json.RawMessage
}

// members splits a JSON value into its object members, in order; isObject
// is false for any other value (then ms is nil). Duplicate names are
// refused, as a document's are. depth is the value's nesting so far.
func members(raw []byte, depth int) (ms []member, isObject bool, err error) {
	if depth > maxPatchDepth {
		return nil, false, fmt.Errorf("objects nested over %d deep", maxPatchDepth)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, false, fmt.Errorf("not JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		var v json.RawMessage
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, false, fmt.Errorf("not JSON: %v", err)
		}
		return nil, false, nil
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false, fmt.Errorf("not JSON: %v", err)
		}
		key := tok.(string) // an object's keys are strings
		if seen[key] {
			return nil, false, fmt.Errorf("member %q given twice", key)
		}
		seen[key] = true
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, false, fmt.Errorf("member %q: not JSON: %v", key, err)
		}
		ms = append(ms, member{key, val})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, false, fmt.Errorf("not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false, errors.New("not JSON: more after the object")
	}
	return ms, true, nil
}

// mergePatch applies patch to target as RFC 7386's MergePatch does:
// a patch that is not an object replaces the target; an object's members
// replace the target's, objects merging member by member and null
// removing one. Members keep their order; new ones go last.
func mergePatch(target, patch json.RawMessage, depth int) (json.RawMessage, error) {
	p, isObject, err := members(patch, depth)
	if err != nil {
		return nil, err
	}
	if !isObject {
		return patch, nil
	}
	t, _, err := members(target, depth) // not an object (or none): {}
	if err != nil && target != nil {
		return nil, err
	}
	at := make(map[string]int, len(t))
	for i, m := range t {
		at[m.key] = i
	}
	for _, m := range p {
		i, ok := at[m.key]
		if isNull(m.val) {
			if ok {
				t[i].val = nil // removed
				delete(at, m.key)
			}
			continue
		}
		var old json.RawMessage
		if ok {
			old = t[i].val
		}
		v, err := mergePatch(old, m.val, depth+1)
		if err != nil {
			return nil, err
		}
		if ok {
			t[i].val = v
		} else {
			at[m.key] = len(t)
			t = append(t, member{m.key, v})
		}
	}
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for _, m := range t {
		if m.val == nil {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.Write(mustJSON(m.key))
		b.WriteByte(':')
		b.Write(bytes.TrimSpace(m.val))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// sameID reports whether the JSON value raw, a document's "id", names id:
// the string id, or the number whose decimal text id is.
func sameID(raw json.RawMessage, id string) bool {
	raw = bytes.TrimSpace(raw)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s == id
	}
	return string(raw) == id
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// mustJSON is s as a JSON string.
func mustJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
