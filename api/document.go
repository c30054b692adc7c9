package api

import (
	"bytes"
	"encoding/json"
)

// DocumentID validates one JSON document and returns its id. A document is
// a JSON object of at most maxBytes bytes with a non-empty string "id" of at
// most 512 bytes. The error names what is wrong.
func DocumentID(doc []byte, maxBytes int) (string, error) {
	if len(doc) > maxBytes {
		return "", BadRequest("document is %d bytes, over the limit of %d", len(doc), maxBytes)
	}
	trimmed := bytes.TrimSpace(doc)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return "", BadRequest("document must be a JSON object")
	}
	var head struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(trimmed, &head); err != nil {
		return "", BadRequest("malformed JSON: %v", err)
	}
	if len(head.ID) == 0 || string(head.ID) == "null" {
		return "", BadRequest(`document has no "id" field`)
	}
	if head.ID[0] != '"' {
		return "", BadRequest(`"id" must be a string, got %s`, truncate(head.ID, 40))
	}
	var id string
	if err := json.Unmarshal(head.ID, &id); err != nil {
		return "", BadRequest(`"id": %v`, err)
	}
	switch {
	case id == "":
		return "", BadRequest(`"id" must not be empty`)
	case len(id) > 512:
		return "", BadRequest(`"id" is %d bytes, over the limit of 512`, len(id))
	}
	return id, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
