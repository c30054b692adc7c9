package api

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/quarrysearch/quarry/api/strictjson"
)

// DocumentID validates one JSON document and returns its id. A document is
// a JSON object of at most maxBytes bytes with a non-empty string "id" of at
// most 512 bytes, valid UTF-8 throughout and with no key twice in any
// object: encoding/json would replace invalid bytes with U+FFFD (two ids
// that differ only there would become one document) and keep the last of
// two keys. The "id" key is matched exactly ("ID" is another field). The
// error names what is wrong and where (a byte offset in doc).
func DocumentID(doc []byte, maxBytes int) (string, error) {
	if len(doc) > maxBytes {
		return "", BadRequest("document is %d bytes, over the limit of %d", len(doc), maxBytes)
	}
	trimmed := bytes.TrimSpace(doc)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return "", BadRequest("document must be a JSON object")
	}
	raw, folded, err := strictjson.CheckObject(doc, "id")
	if err != nil {
		return "", BadRequest("malformed document: %v", err)
	}
	if len(raw) == 0 || string(raw) == "null" {
		if folded != "" {
			return "", BadRequest(`document has no "id" field (field names are case-sensitive: it has %q)`, folded)
		}
		return "", BadRequest(`document has no "id" field`)
	}
	if raw[0] != '"' {
		return "", BadRequest(`"id" must be a string, got %s`, truncate(raw, 40))
	}
	var id string
	if bytes.IndexByte(raw, '\\') < 0 {
		id = string(raw[1 : len(raw)-1])
	} else if err := json.Unmarshal(raw, &id); err != nil {
		return "", BadRequest(`"id" is not a valid JSON string`)
	}
	switch {
	case id == "":
		return "", BadRequest(`"id" must not be empty`)
	case len(id) > MaxIDBytes:
		return "", BadRequest(`"id" is %d bytes, over the limit of %d`, len(id), MaxIDBytes)
	}
	return id, nil
}

// MaxIDBytes is the longest document id.
const MaxIDBytes = 512

// ValidDocumentID checks an id given on its own (to read or delete a
// document): 1 to MaxIDBytes bytes of valid UTF-8, as DocumentID accepts
// in a document; no stored document can have another.
func ValidDocumentID(id string) error {
	if id == "" || len(id) > MaxIDBytes {
		return BadRequest("document id must be 1-%d bytes, got %d", MaxIDBytes, len(id))
	}
	if at := invalidUTF8(id); at >= 0 {
		return BadRequest("document id %q is not valid UTF-8 (byte %d)", id, at)
	}
	return nil
}

// invalidUTF8 returns the offset of the first byte of s that is not valid
// UTF-8, or -1.
func invalidUTF8(s string) int {
	if utf8.ValidString(s) {
		return -1
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return -1
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
