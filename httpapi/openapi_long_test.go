//go:build long

package httpapi

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestOpenAPIValid validates the OpenAPI document against the OpenAPI
// 3.1 schema with swagger-parser (testdata/openapi, pinned in its
// package-lock.json, installed by npm ci there when missing), every
// $ref resolved.
func TestOpenAPIValid(t *testing.T) {
	dir := filepath.Join("testdata", "openapi")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@apidevtools", "swagger-parser")); err != nil {
		npm := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		npm.Dir = dir
		if out, err := npm.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s (needs node and npm): %v\n%s", dir, err, out)
		}
	}
	doc := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(doc, OpenAPI(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", filepath.Join(dir, "validate.js"), doc).CombinedOutput()
	if err != nil {
		t.Fatalf("the OpenAPI document is not valid: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
