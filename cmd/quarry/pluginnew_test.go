package main

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/sdkfiles"
)

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// Bad input to plugin new is refused with an error naming what is wrong,
// as bad input (exit status 2), writing nothing.
func TestPluginNewBadInput(t *testing.T) {
	t.Parallel()
	sdk, _ := filepath.Abs("../../sdk")
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	notSDK := t.TempDir()
	cases := []struct {
		name, lang, kind, dir, sdk, want string
	}{
		{"Bad Name", "go", "rewriter", "", sdk, `plugin name "Bad Name"`},
		{"", "go", "rewriter", "", sdk, `plugin name ""`},
		{"ok", "rust", "rewriter", "", sdk, `--lang "rust": want one of go, c, assemblyscript`},
		{"ok", "", "rewriter", "", sdk, `--lang "": want one of`},
		{"ok", "c", "scorer", "", sdk, `--kind "scorer": want rewriter or ranker`},
		{"ok", "c", "ranker", full, sdk, "the folder exists and is not empty"},
		{"ok", "c", "ranker", filepath.Join(t.TempDir(), "p"), notSDK, "not a Quarry sdk directory"},
	}
	for _, c := range cases {
		dir := c.dir
		if dir == "" {
			dir = filepath.Join(t.TempDir(), "p")
		}
		_, err := pluginNew(c.name, c.lang, c.kind, dir, c.sdk)
		if err == nil || !strings.Contains(err.Error(), c.want) || exitCode(err) != exitUsage || api.CodeOf(err) != api.CodeBadRequest {
			t.Errorf("plugin new %q --lang %q --kind %q: %v (exit %d), want a bad-input error with %q", c.name, c.lang, c.kind, err, exitCode(err), c.want)
		}
		if c.dir == "" {
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("plugin new %q --lang %q --kind %q: wrote %s anyway", c.name, c.lang, c.kind, dir)
			}
		}
	}
}

// plugin new run where no Quarry checkout is (the current directory and
// HOME fresh temporary directories, no --sdk) writes, in each language, a
// folder that holds the SDK it builds with (the copy built into quarry,
// internal/sdkfiles) and names no path outside itself; the Go one builds
// with its own build.sh and passes its test, with no network
// (GOPROXY=off). The C and AssemblyScript builds need their toolchains:
// TestPluginNewBuildsAndPasses (long tier) builds all six from outside
// the checkout.
func TestPluginNewOutsideCheckout(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	goenv := strings.Fields(string(mustOutput(t, exec.Command("go", "env", "GOENV", "GOCACHE", "GOMODCACHE", "GOPATH"))))
	if len(goenv) != 4 {
		t.Fatalf("go env: %q", goenv)
	}
	home, wd := t.TempDir(), t.TempDir()
	if strings.HasPrefix(wd, root+string(filepath.Separator)) {
		t.Fatalf("the temporary directory %s is inside the checkout %s", wd, root)
	}
	// The Go caches stay the user's (a fresh HOME would build the
	// standard library again); nothing may come from the network, and no
	// workspace may supply the SDK.
	for k, v := range map[string]string{"HOME": home, "GOENV": goenv[0], "GOCACHE": goenv[1], "GOMODCACHE": goenv[2], "GOPATH": goenv[3],
		"GOPROXY": "off", "GOFLAGS": "-mod=readonly", "GOWORK": "off"} {
		t.Setenv(k, v)
	}
	t.Chdir(wd)
	for _, c := range []struct {
		lang, kind string
		sdk        string   // where the SDK's files go in the folder
		points     []string // what points the build at them: file, text
	}{
		{"go", "ranker", "quarry-sdk", []string{"go.mod", "replace github.com/quarrysearch/quarry/sdk => ./quarry-sdk\n"}},
		{"go", "rewriter", "quarry-sdk", []string{"go.mod", "replace github.com/quarrysearch/quarry/sdk => ./quarry-sdk\n"}},
		{"c", "ranker", ".", []string{"build.sh", " -I . "}},
		{"assemblyscript", "ranker", "quarry-sdk", []string{"package.json", `"@quarrysearch/sdk": "file:./quarry-sdk"`}},
	} {
		t.Run(c.lang+"-"+c.kind, func(t *testing.T) {
			name := c.lang + "-" + c.kind
			out, errOut, code := cli(t, "", "plugin", "new", name, "--lang", c.lang, "--kind", c.kind)
			if code != 0 || !strings.HasPrefix(out, "wrote "+name+":") {
				t.Fatalf("plugin new: exit %d\n%s%s", code, out, errOut)
			}
			dir := filepath.Join(wd, name)
			want, err := sdkfiles.Files(c.lang)
			if err != nil {
				t.Fatal(err)
			}
			for p, b := range want {
				got, err := os.ReadFile(filepath.Join(dir, c.sdk, filepath.FromSlash(p)))
				if err != nil || !bytes.Equal(got, b) {
					t.Errorf("the folder's %s/%s is not the SDK's (%v)", c.sdk, p, err)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(dir, c.points[0])); !strings.Contains(string(b), c.points[1]) {
				t.Errorf("%s does not point the build at the folder's SDK (want %q):\n%s", c.points[0], c.points[1], b)
			}
			err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(p)
				if bytes.Contains(b, []byte(root)) || bytes.Contains(b, []byte(wd)) {
					t.Errorf("%s names a path outside the folder (the checkout %s or %s): it would not build elsewhere", p, root, wd)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if c.lang != "go" {
				return
			}
			for _, args := range [][]string{{"sh", "build.sh"}, {"go", "test", "./..."}} {
				cmd := exec.Command(args[0], args[1:]...)
				cmd.Dir = dir
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, b)
				}
			}
			wasm, err := os.ReadFile(filepath.Join(dir, name+".wasm"))
			if err != nil || !bytes.HasPrefix(wasm, []byte("\x00asm")) {
				t.Fatalf("build.sh wrote no WebAssembly module %s.wasm (%v)", name, err)
			}
		})
	}
}

// A C plugin's build.sh takes clang, else the newest clang-NN on PATH,
// and wasm-ld, else the newest wasm-ld-NN (Debian's versioned packages);
// with no clang it says what to install, and when clang fails with no
// wasm-ld, that lld is missing. The tools are stand-ins that record how
// they were called.
func TestCBuildFindsClang(t *testing.T) {
	t.Parallel()
	dir, err := pluginNew("boost", "c", "ranker", filepath.Join(t.TempDir(), "boost"), "")
	if err != nil {
		t.Fatal(err)
	}
	dirname, err := exec.LookPath("dirname") // build.sh's one program
	if err != nil {
		t.Fatal(err)
	}
	const (
		ok   = "#!/bin/sh\necho \"$0 $*\" > called\n"
		fail = "#!/bin/sh\necho \"$0 $*\" > called\nexit 1\n"
	)
	cases := []struct {
		name  string
		tools map[string]string // on PATH
		code  int
		want  string // the compiler called and its linker flag, or what stderr says
	}{
		{"versioned", map[string]string{"clang-9": ok, "clang-15": ok, "clang-14": ok, "wasm-ld-9": ok, "wasm-ld-14": ok}, 0, "BIN/clang-15 --target=wasm32 -O2 -mbulk-memory -nostdlib -Wl,--no-entry -Wall -fuse-ld=BIN/wasm-ld-14 -I . -o boost.wasm boost.c"},
		{"plain first", map[string]string{"clang": ok, "clang-15": ok, "wasm-ld": ok, "wasm-ld-15": ok}, 0, "BIN/clang --target=wasm32 -O2 -mbulk-memory -nostdlib -Wl,--no-entry -Wall -I . -o boost.wasm boost.c"},
		{"no wasm-ld, clang finds its own", map[string]string{"clang-15": ok, "clang-format-16": ok}, 0, "BIN/clang-15 --target=wasm32 -O2 -mbulk-memory -nostdlib -Wl,--no-entry -Wall -I . -o boost.wasm boost.c"},
		{"no clang", map[string]string{"wasm-ld": ok, "clang-format-16": ok, "clang-cpp-14": ok}, 1, "build.sh: no clang or clang-NN on PATH: install clang"},
		{"no lld", map[string]string{"clang-14": fail}, 1, "build.sh: BIN/clang-14 failed, and no wasm-ld or wasm-ld-NN is on PATH: install lld"},
	}
	for _, c := range cases {
		bin, progs := t.TempDir(), t.TempDir()
		if err := os.Symlink(dirname, filepath.Join(progs, "dirname")); err != nil {
			t.Fatal(err)
		}
		for name, script := range c.tools {
			if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		os.Remove(filepath.Join(dir, "called"))
		cmd := exec.Command("/bin/sh", "build.sh")
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + progs + ":" + bin}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		want := strings.ReplaceAll(c.want, "BIN", bin)
		got := strings.TrimSpace(stderr.String())
		if c.code == 0 {
			b, _ := os.ReadFile(filepath.Join(dir, "called"))
			got = strings.TrimSpace(string(b))
		}
		if code != c.code || !strings.HasPrefix(got, want) {
			t.Errorf("%s: exit %d (%v), %q\nwant exit %d, %q", c.name, code, err, got, c.code, want)
		}
	}
}

func mustOutput(t *testing.T, cmd *exec.Cmd) []byte {
	t.Helper()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	return out
}
