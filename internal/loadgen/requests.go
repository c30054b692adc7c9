package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/quarrysearch/quarry/api"
)

// ParseRequestLine reads one line of a queries file: a search request in
// JSON, or plain text taken as its q.
func ParseRequestLine(raw []byte, line int) (api.SearchRequest, error) {
	var req api.SearchRequest
	if raw[0] != '{' {
		req.Q = string(raw)
		return req, nil
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return req, api.BadRequest("line %d: %v", line, err)
	}
	return req, nil
}

// ReadRequests reads a queries file (see ParseRequestLine), skipping
// blank lines.
func ReadRequests(path string) ([]api.SearchRequest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []api.SearchRequest
	for i, raw := range bytes.Split(b, []byte("\n")) {
		if raw = bytes.TrimSpace(raw); len(raw) == 0 {
			continue
		}
		req, err := ParseRequestLine(raw, i+1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, req)
	}
	return out, nil
}
