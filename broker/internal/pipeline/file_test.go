package pipeline

import (
	"errors"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

// A pipeline file is read strictly: keys in another case, twice or
// unknown, invalid UTF-8 and values of the wrong type are refused, naming
// the field, never in Go's words.
func TestParsePipelineFileStrict(t *testing.T) {
	cases := []struct {
		name, json, want string
	}{
		{"good", `{"rewriters":[{"plugin":"s","wasm":"s.wasm","config":{"a":1},"budget_ms":20,"policy":"fail-open"}],"rankers":[]}`, ""},
		{"unknown", `{"rewriters":[],"bogus":1}`, `unknown field "bogus"`},
		{"wrong case", `{"Rankers":[]}`, `unknown field "Rankers" (field names are case-sensitive: did you mean "rankers"?)`},
		{"wrong case in a step", `{"rankers":[{"plugin":"g","Wasm":"g.wasm"}]}`, `unknown field "Wasm" in rankers[0]`},
		{"duplicate", `{"rankers":[{"plugin":"a","plugin":"b","wasm":"x"}]}`, `duplicate field "plugin" in rankers[0]`},
		{"duplicate in config", `{"rankers":[{"plugin":"a","wasm":"x","config":{"k":1,"k":2}}]}`, `duplicate field "k" in rankers[0].config`},
		{"wrong type", `{"rankers":[{"plugin":"a","wasm":"x","budget_ms":"20"}]}`, "rankers[0].budget_ms must be an integer, got a string"},
		{"invalid UTF-8", "{\"rankers\":[{\"plugin\":\"a\xff\",\"wasm\":\"x\"}]}", "invalid UTF-8 in rankers[0].plugin"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseFile("p.json", []byte(c.json))
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a bad request containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "Go struct") || strings.Contains(err.Error(), "of type") {
				t.Fatalf("%v names Go types", err)
			}
		})
	}
}
