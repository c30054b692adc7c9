// Package wasmtest builds WebAssembly guests for tests: Go plugins with the
// standard toolchain (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared),
// WAT modules with wabt's wat2wasm, freestanding C with clang and
// wasm-ld, and AssemblyScript with the npm project's own asc. It is the
// one helper every test that needs a real plugin uses.
//
// The WAT, C and AssemblyScript modules are committed, built, under
// testdata/prebuilt (see Prebuilt), so the fast test tier needs Go alone;
// the long tier builds each one again and fails on a module that its
// source no longer builds (QUARRY_WASM=check), and `go generate
// ./internal/wasmtest` rebuilds them all.
package wasmtest

//go:generate sh -c "rm -rf testdata/prebuilt && cd ../.. && QUARRY_WASM=rebuild go test -tags long -count=1 ./... ./sdk/... ./examples/plugins/..."

import (
	"context"
	"github.com/quarrysearch/quarry/internal/gobuild"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	mu    sync.Mutex
	built = map[string][]byte{}
)

// GoPlugin builds the Go plugin in dir (a package main) and returns the
// .wasm bytes. Builds are cached per test binary.
func GoPlugin(tb testing.TB, dir string) []byte {
	tb.Helper()
	return goBuild(tb, dir, gobuild.Reactor)
}

// GoCommand builds the Go package main in dir as a WASI command (the
// default build mode: it exports _start, not _initialize) and returns the
// .wasm bytes, for tests of what the host does with one. Builds are cached
// per test binary.
func GoCommand(tb testing.TB, dir string) []byte {
	tb.Helper()
	return goBuild(tb, dir, gobuild.Command)
}

func goBuild(tb testing.TB, dir string, mode gobuild.Mode) []byte {
	tb.Helper()
	abs := absPath(tb, dir)
	return cached(tb, abs+" "+string(mode), filepath.Base(abs)+".wasm", func(out string) {
		// go build reads the sources in another process: read them here
		// too, so go test's cache reruns the test when one changes.
		if err := gobuild.ReadSources(context.Background(), abs); err != nil {
			tb.Fatal(err)
		}
		if err := gobuild.Build(context.Background(), abs, out, mode); err != nil {
			tb.Fatal(err)
		}
	})
}

// absPath is path made absolute.
func absPath(tb testing.TB, path string) string {
	tb.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		tb.Fatal(err)
	}
	return abs
}

// cached returns the module built under key, or runs build with the path
// of a file named name for it to write the module to, and keeps it for the
// rest of the test binary. One build runs at a time.
func cached(tb testing.TB, key, name string, build func(out string)) []byte {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if b, ok := built[key]; ok {
		return b
	}
	out := filepath.Join(tb.TempDir(), name)
	build(out)
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	built[key] = b
	return b
}

// C compiles a freestanding C file (no libc) to a WebAssembly module:
//
//	clang --target=wasm32 -O2 -mbulk-memory -nostdlib -Wl,--no-entry -I sdk/c -o out.wasm src args...
//
// where sdk/c (the C SDK's quarry.h) is the repository's, wherever the
// test runs. -mbulk-memory (memory.copy and memory.fill, which wazero
// runs) makes copies of unknown size a single instruction: the C ranker
// over 1,000 candidates took 129-164 µs at p50 with it, 208-232 µs
// without (BenchmarkLanguages in plugins, one run). It builds with
// clang and wasm-ld (Debian packages clang and lld). Where wasm-ld
// is installed only under a versioned name (wasm-ld-14), clang is given
// its path. Builds are cached per test binary.
func C(tb testing.TB, src string, args ...string) []byte {
	tb.Helper()
	abs := absPath(tb, src)
	key := strings.Join(append([]string{abs}, args...), " ")
	name := strings.TrimSuffix(filepath.Base(abs), ".c")
	return cached(tb, key, name+".wasm", func(out string) {
		var h hasher
		h.add(append([]string{"c"}, args...)...)
		h.file(tb, filepath.Dir(abs), abs)
		h.tree(tb, CSDK, ".h")
		copyTo(tb, out, prebuilt(tb, "c", name, h.sum(), func(out string) { clang(tb, src, abs, out, args) }))
	})
}

// clang builds the C file abs (named src to the user) into out.
func clang(tb testing.TB, src, abs, out string, args []string) {
	tb.Helper()
	clang := findTool("clang")
	if clang == "" {
		tb.Fatalf("build %s: no clang on PATH (install Debian's clang and lld)", src)
	}
	cmdArgs := []string{"--target=wasm32", "-O2", "-mbulk-memory", "-nostdlib", "-Wl,--no-entry", "-I", CSDK, "-o", out, abs}
	if ld := findTool("wasm-ld"); ld == "" {
		tb.Fatalf("build %s: no wasm-ld on PATH (install Debian's lld)", src)
	} else if filepath.Base(ld) != "wasm-ld" {
		cmdArgs = append(cmdArgs, "-fuse-ld="+ld)
	}
	cmdArgs = append(cmdArgs, args...)
	if msg, err := exec.Command(clang, cmdArgs...).CombinedOutput(); err != nil {
		tb.Fatalf("build %s: %s %s: %v\n%s", src, clang, strings.Join(cmdArgs, " "), err, msg)
	}
}

// copyTo writes b to the file out.
func copyTo(tb testing.TB, out string, b []byte) {
	tb.Helper()
	if err := os.WriteFile(out, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// CSDK is the directory of the C SDK's header, sdk/c/quarry.h.
var CSDK = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "sdk", "c")
}()

// findTool returns the path of name on PATH or, failing that, of its
// newest versioned name (name-14, name-15…), or "".
func findTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	var found []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		matches, _ := filepath.Glob(filepath.Join(dir, name+"-[0-9]*"))
		found = append(found, matches...)
	}
	var best string
	bestVersion := -1
	for _, p := range found {
		v, ok := version(strings.TrimPrefix(filepath.Base(p), name+"-"))
		if ok && v > bestVersion {
			if _, err := exec.LookPath(p); err == nil {
				best, bestVersion = p, v
			}
		}
	}
	return best
}

// version parses a major version, "14".
func version(s string) (int, bool) {
	if s == "" || len(s) > 4 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	v := 0
	for _, c := range s {
		v = v*10 + int(c-'0')
	}
	return v, true
}

// WAT compiles WebAssembly text with wat2wasm (Debian package wabt), or
// returns its prebuilt module.
func WAT(tb testing.TB, src string) []byte {
	tb.Helper()
	var h hasher
	h.add("wat", src)
	return prebuilt(tb, "wat", "", h.sum(), func(out string) { wat2wasm(tb, src, out) })
}

// wat2wasm compiles src into the file out.
func wat2wasm(tb testing.TB, src, out string) {
	tb.Helper()
	in := filepath.Join(tb.TempDir(), "m.wat")
	if err := os.WriteFile(in, []byte(src), 0o644); err != nil {
		tb.Fatal(err)
	}
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		tb.Fatalf("no prebuilt module for this WAT under %s and no wat2wasm to build it (install Debian's wabt, run the test once and commit the module it writes):\n%s", Prebuilt, numbered(src))
	}
	if msg, err := exec.Command("wat2wasm", in, "-o", out).CombinedOutput(); err != nil {
		tb.Fatalf("wat2wasm: %v\n%s\n%s", err, msg, numbered(src))
	}
}

// WATFile compiles a .wat file.
func WATFile(tb testing.TB, path string) []byte {
	tb.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return WAT(tb, string(src))
}

func numbered(src string) string {
	var b strings.Builder
	for i, l := range strings.Split(src, "\n") {
		b.WriteString(strings.Repeat(" ", 4-len(itoa(i+1))) + itoa(i+1) + " " + l + "\n")
	}
	return b.String()
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for i > 0 {
		d = append([]byte{byte('0' + i%10)}, d...)
		i /= 10
	}
	return string(d)
}

// ASConfig is the AssemblyScript SDK's compiler options, as a project
// that depends on @quarrysearch/sdk sees them.
const ASConfig = "node_modules/@quarrysearch/sdk/asconfig.json"

// AssemblyScript compiles entry (a path inside the npm project dir) with
// the project's own AssemblyScript compiler:
//
//	node_modules/.bin/asc entry -o out.wasm args...
//
// If the project's node_modules has no compiler, it runs `npm ci` there
// first (one test process at a time). A missing node or npm fails the
// test. Builds are cached per test binary.
func AssemblyScript(tb testing.TB, dir, entry string, args ...string) []byte {
	tb.Helper()
	abs := absPath(tb, dir)
	key := strings.Join(append([]string{"asc", abs, entry}, args...), " ")
	name := strings.TrimSuffix(filepath.Base(entry), ".ts")
	return cached(tb, key, name+".wasm", func(out string) {
		var h hasher
		h.add(append([]string{"as", entry}, args...)...)
		h.tree(tb, abs, ".ts", ".json")
		h.tree(tb, ASSDK, ".ts", ".json")
		copyTo(tb, out, prebuilt(tb, "as", name, h.sum(), func(out string) { asc(tb, dir, abs, entry, out, args) }))
	})
}

// ASSDK is the directory of the AssemblyScript SDK, sdk/assemblyscript.
var ASSDK = filepath.Join(CSDK, "..", "assemblyscript")

// asc builds entry in the npm project abs (named dir to the user) into out.
func asc(tb testing.TB, dir, abs, entry, out string, args []string) {
	tb.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		tb.Fatalf("build %s: no node on PATH (install Debian's nodejs and npm)", entry)
	}
	NPMInstall(tb, abs)
	cmd := exec.Command(filepath.Join(abs, "node_modules", ".bin", "asc"), append([]string{entry, "-o", out}, args...)...)
	cmd.Dir = abs
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build %s in %s: asc: %v\n%s", entry, dir, err, msg)
	}
}

// NPMInstall runs `npm ci` in the npm project dir unless its
// node_modules/.bin/asc exists, holding a lock file so that test
// processes running at once do not install over each other.
func NPMInstall(tb testing.TB, dir string) {
	tb.Helper()
	asc := filepath.Join(dir, "node_modules", ".bin", "asc")
	if _, err := os.Stat(asc); err == nil {
		return
	}
	if _, err := exec.LookPath("npm"); err != nil {
		tb.Fatalf("%s has no node_modules and there is no npm on PATH (install Debian's nodejs and npm, then run npm ci there)", dir)
	}
	lock := filepath.Join(dir, ".npm-install.lock")
	deadline := time.Now().Add(10 * time.Minute)
	for {
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("npm ci in %s: %s held for 10 minutes (remove it if no install is running)", dir, lock)
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer os.Remove(lock)
	if _, err := os.Stat(asc); err == nil {
		return // another process installed it meanwhile
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("npm ci in %s: %v\n%s", dir, err, msg)
	}
}
