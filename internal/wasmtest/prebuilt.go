package wasmtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/internal/testtier"
)

// Prebuilt is the directory of the committed modules that WAT, C and
// AssemblyScript return without their toolchains, so the fast test tier
// needs Go alone. A module's file is named for its kind, its source's
// name and a hash of everything its build reads (the source, the SDK
// files it includes, the build's arguments):
//
//	testdata/prebuilt/wat-3f2a….wasm
//	testdata/prebuilt/c-ranker-91bc….wasm
//
// How a helper treats it depends on QUARRY_WASM (see Mode).
var Prebuilt = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "prebuilt")
}()

// ModeEnv names the environment variable that chooses how the helpers use
// Prebuilt:
//
//   - "" (unset in the fast tier): a committed module is used as it is;
//     a missing one is built with its toolchain and written to Prebuilt,
//     to be committed, and without the toolchain the test fails saying so;
//   - "check" (unset in the long tier, -tags long): every module is built
//     with its toolchain and must equal the committed one, so a source
//     changed without its module fails;
//   - "rebuild" (go generate): every module is built and written.
const ModeEnv = "QUARRY_WASM"

// prebuilt returns the module of kind (wat, c, as) named name whose build
// reads what sum hashes, from Prebuilt or from build (which writes the
// module to the path it is given), as ModeEnv says.
func prebuilt(tb testing.TB, kind, name string, sum []byte, build func(out string)) []byte {
	tb.Helper()
	file := kind
	if name != "" {
		file += "-" + name
	}
	file += "-" + hex.EncodeToString(sum[:8]) + ".wasm"
	path := filepath.Join(Prebuilt, file)
	mode, ok := os.LookupEnv(ModeEnv)
	if !ok && testtier.Long {
		mode = "check"
	}
	switch mode {
	case "", "check", "rebuild":
	default:
		tb.Fatalf("%s=%q: want unset, check or rebuild", ModeEnv, mode)
	}
	committed, err := os.ReadFile(path)
	if err == nil && mode == "" {
		return committed
	}
	out := filepath.Join(tb.TempDir(), file)
	build(out)
	fresh, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	switch {
	case mode == "check" && committed == nil:
		writeAtomic(tb, path, fresh)
		tb.Fatalf("%s was not committed: built it now; commit it", path)
	case mode == "check" && !slices.Equal(committed, fresh):
		writeAtomic(tb, path, fresh)
		tb.Fatalf("%s is stale: its toolchain builds other bytes from the same source (rewritten now; commit it)", path)
	case committed == nil || !slices.Equal(committed, fresh):
		writeAtomic(tb, path, fresh)
		tb.Logf("wrote %s: commit it", path)
	}
	return fresh
}

// writeAtomic writes b to path through a temporary file, so test
// processes running at once never read half a module.
func writeAtomic(tb testing.TB, path string, b []byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		tb.Fatal(err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		tb.Fatalf("write %s: %v %v", path, werr, cerr)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		tb.Fatal(err)
	}
}

// hasher hashes the inputs of a build, each with its length so that no
// two lists of inputs hash alike.
type hasher struct{ b []byte }

func (h *hasher) add(parts ...string) {
	for _, p := range parts {
		h.b = fmt.Appendf(h.b, "%d:", len(p))
		h.b = append(h.b, p...)
	}
}

// file adds a file's path (relative to base) and its contents.
func (h *hasher) file(tb testing.TB, base, path string) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	rel, err := filepath.Rel(base, path)
	if err != nil {
		tb.Fatal(err)
	}
	h.add(filepath.ToSlash(rel), string(b))
}

// tree adds every file under dir whose name ends in one of exts, in
// lexical order, skipping node_modules and build outputs.
func (h *hasher) tree(tb testing.TB, dir string, exts ...string) {
	tb.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != dir && (n == "node_modules" || n == "build" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		for _, e := range exts {
			if strings.HasSuffix(path, e) {
				h.file(tb, dir, path)
				break
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func (h *hasher) sum() []byte {
	s := sha256.Sum256(h.b)
	return s[:]
}

// PluginCache is one directory of compiled plugins (wazero's compilation
// cache, keyed by a module's bytes) for every test of a run, and of the
// runs after it: under -race compiling a Go plugin takes tens of seconds,
// and without it each node of each test compiled the same modules again.
// A test that measures or bounds compiling itself must not use it.
func PluginCache(tb testing.TB) string {
	tb.Helper()
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "quarry-test", "plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	return dir
}
