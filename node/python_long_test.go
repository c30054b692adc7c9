//go:build long

package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/quarrysearch/quarry/internal/wasmtest"
)

// TestPythonClient runs the Python client's tests (clients/python/tests)
// against a node's HTTP API: index, ingest, search, documents, a cursor
// walk (over a point in time), an alias, a plugin push, the errors. It
// needs python3.
func TestPythonClient(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("the Python client's tests need python3 (Debian: apt-get install python3; .ci/run does)")
	}
	n := startNode(t)
	wasm := filepath.Join(t.TempDir(), "suffix.wasm")
	if err := os.WriteFile(wasm, wasmtest.WATFile(t, "../examples/plugins/wat/suffix.wat"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), python, "-m", "unittest", "discover", "-v", "-s", filepath.Join("..", "clients", "python", "tests"))
	cmd.Env = append(os.Environ(), "QUARRY_URL=http://"+n.HTTPAddr, "QUARRY_TEST_WASM="+wasm, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the Python client's tests: %v", err)
	}
}
