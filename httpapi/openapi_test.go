package httpapi

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

// TestOpenAPI holds the OpenAPI document to the handlers: every route
// Handler serves is described (its method, path and path parameters, a
// summary, its success and error responses) and nothing else is; every
// error code the API declares (api's and this package's, read from their
// source) is among the document's responses under its HTTP status; and
// GET /openapi.json serves the document.
func TestOpenAPI(t *testing.T) {
	var doc struct {
		OpenAPI    string                               `json:"openapi"`
		Paths      map[string]map[string]map[string]any `json:"paths"`
		Components struct {
			Responses map[string]struct {
				Description string `json:"description"`
			} `json:"responses"`
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	served := map[string]bool{}
	for _, rt := range routes() {
		served[rt.pattern] = true
		op, ok := operations[rt.pattern]
		if !ok || op.summary == "" {
			t.Errorf("route %s has no operation (summary) in openapi.go", rt.pattern)
			continue
		}
		method, path, _ := strings.Cut(rt.pattern, " ")
		got := doc.Paths[path][strings.ToLower(method)]
		if got == nil {
			t.Errorf("route %s is not in the document", rt.pattern)
			continue
		}
		declared := map[string]bool{}
		params, _ := got["parameters"].([]any)
		for _, p := range params {
			if p := p.(map[string]any); p["in"] == "path" {
				declared[p["name"].(string)] = true
			}
		}
		for _, seg := range strings.Split(path, "/") {
			if name, ok := strings.CutPrefix(seg, "{"); ok && !declared[strings.TrimSuffix(name, "}")] {
				t.Errorf("%s: path parameter %s not declared", rt.pattern, seg)
			}
		}
		responses, _ := got["responses"].(map[string]any)
		if len(responses) == 0 {
			t.Errorf("%s: no responses", rt.pattern)
		}
		if rt.access.who != anyone && responses["401"] == nil {
			t.Errorf("%s: a guarded route without its 401", rt.pattern)
		}
	}
	for pattern := range operations {
		if !served[pattern] {
			t.Errorf("openapi.go describes %s, which Handler does not serve", pattern)
		}
	}
	n := 0
	for _, methods := range doc.Paths {
		n += len(methods)
	}
	if n != len(served) {
		t.Errorf("the document has %d operations, Handler serves %d routes", n, len(served))
	}

	// Every declared code, under its status, named.
	codes := declaredCodes(t, "../api", "api.go")
	codes = append(codes, declaredCodes(t, ".", "")...)
	if len(codes) < 15 {
		t.Fatalf("read only %d error codes from the source: %v", len(codes), codes)
	}
	for _, c := range codes {
		r, ok := doc.Components.Responses[errorResponse(status(api.Code(c)))]
		if !ok || !strings.Contains(r.Description, c) {
			t.Errorf("error code %s (HTTP %d) is not among the document's responses: %+v", c, status(api.Code(c)), r)
		}
	}
	if doc.Components.Schemas["SearchRequest"] == nil || doc.Components.Schemas["SearchResponse"] == nil {
		t.Errorf("the search bodies have no schema: %v", doc.Components.Schemas)
	}

	srv := httptest.NewServer(Handler(nil, Options{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || string(body) != string(OpenAPI()) {
		t.Errorf("GET /openapi.json: %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
}

// declaredCodes reads the values of the constants of type Code (api.Code
// outside package api) declared in dir's Go files (only file, if set).
func declaredCodes(t *testing.T, dir, file string) []string {
	t.Helper()
	fset := token.NewFileSet()
	pattern := filepath.Join(dir, "*.go")
	if file != "" {
		pattern = filepath.Join(dir, file)
	}
	names, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || vs.Type == nil || len(vs.Values) != len(vs.Names) {
				return true
			}
			typ := ""
			switch x := vs.Type.(type) {
			case *ast.Ident:
				typ = x.Name
			case *ast.SelectorExpr:
				typ = x.Sel.Name
			}
			if typ != "Code" {
				return true
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					out = append(out, s)
				}
			}
			return true
		})
	}
	return out
}
