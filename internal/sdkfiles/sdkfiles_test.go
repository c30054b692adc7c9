package sdkfiles_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/internal/sdkfiles"
)

var update = flag.Bool("update", false, "copy the SDK files from sdk/ into _sdk/ (go generate ./internal/sdkfiles)")

// sdkRoot is the checkout's SDK.
const sdkRoot = "../../sdk"

// sources returns the files of sdk/ a plugin in lang builds with, by their
// paths from the language's SDK root, as the binary must carry them:
//
//   - go: the module's go.mod (and go.sum, if it ever has one) and every
//     .go file but tests, outside c/, assemblyscript/, testdata and
//     node_modules;
//   - c: the headers in sdk/c;
//   - assemblyscript: package.json and what its "files" publishes (what
//     npm would install of the package), never node_modules.
func sources(t *testing.T, lang string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	add := func(root, p string) {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		out[p] = b
	}
	// walk adds each file under root/dir that keep accepts.
	walk := func(root, dir string, keep func(p string) bool) {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				switch d.Name() {
				case "node_modules", "testdata":
					return filepath.SkipDir
				}
				return nil
			}
			if keep(rel) {
				add(root, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	switch lang {
	case "go":
		walk(sdkRoot, ".", func(p string) bool {
			if strings.HasPrefix(p, "c/") || strings.HasPrefix(p, "assemblyscript/") {
				return false
			}
			return p == "go.mod" || p == "go.sum" || strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go")
		})
	case "c":
		root := filepath.Join(sdkRoot, "c")
		hs, _ := filepath.Glob(filepath.Join(root, "*.h"))
		for _, h := range hs {
			add(root, filepath.Base(h))
		}
	case "assemblyscript":
		root := filepath.Join(sdkRoot, "assemblyscript")
		add(root, "package.json")
		var pkg struct {
			Files []string `json:"files"`
		}
		if err := json.Unmarshal(out["package.json"], &pkg); err != nil || len(pkg.Files) == 0 {
			t.Fatalf("%s/package.json: no \"files\" (%v): it says what the package publishes", root, err)
		}
		for _, f := range pkg.Files {
			f = path.Clean(f)
			walk(root, f, func(string) bool { return true })
		}
	default:
		t.Fatalf("no rule for the SDK files of %q", lang)
	}
	if len(out) == 0 {
		t.Fatalf("no %s SDK files under %s", lang, sdkRoot)
	}
	return out
}

// TestCopiesCurrent checks that the binary carries exactly the SDK files
// of sdk/ (sources) for each language: none missing, none extra, none
// different. With -update (go generate ./internal/sdkfiles) it writes
// them under _sdk/ instead.
func TestCopiesCurrent(t *testing.T) {
	if *update {
		if err := os.RemoveAll("_sdk"); err != nil {
			t.Fatal(err)
		}
		for _, lang := range sdkfiles.Langs {
			for p, b := range sources(t, lang) {
				if p == "go.mod" {
					p = "go.mod.txt"
				}
				dst := filepath.Join("_sdk", lang, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dst, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		return
	}
	const fix = "run `go generate ./internal/sdkfiles` and commit what it writes"
	for _, lang := range sdkfiles.Langs {
		want := sources(t, lang)
		got, err := sdkfiles.Files(lang)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range slices.Sorted(maps.Keys(want)) {
			switch g, ok := got[p]; {
			case !ok:
				t.Errorf("%s SDK: the binary lacks %s: %s", lang, p, fix)
			case !bytes.Equal(g, want[p]):
				t.Errorf("%s SDK: the binary's %s differs from sdk/'s: %s", lang, p, fix)
			}
		}
		for _, p := range slices.Sorted(maps.Keys(got)) {
			if _, ok := want[p]; !ok {
				t.Errorf("%s SDK: the binary carries %s, which sdk/ has not (or a plugin does not build with): %s", lang, p, fix)
			}
		}
	}
}

// Write puts a language's files where its build looks for them, and
// refuses a language with no SDK.
func TestWrite(t *testing.T) {
	t.Parallel()
	cases := []struct {
		lang string
		want []string // among what it writes
	}{
		{"go", []string{"go.mod", "sdk.go", "abi/abi.go", "sdktest/sdktest.go"}},
		{"c", []string{"quarry.h"}},
		{"assemblyscript", []string{"package.json", "asconfig.json", "assembly/index.ts"}},
	}
	for _, c := range cases {
		dir := t.TempDir()
		wrote, err := sdkfiles.Write(dir, c.lang)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !slices.Contains(wrote, w) {
				t.Errorf("%s: wrote %v, want %s among them", c.lang, wrote, w)
			}
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(w)))
			if err != nil {
				t.Errorf("%s: %v", c.lang, err)
				continue
			}
			orig, _ := os.ReadFile(filepath.Join(sdkRoot, map[string]string{"go": ".", "c": "c", "assemblyscript": "assemblyscript"}[c.lang], filepath.FromSlash(w)))
			if !bytes.Equal(b, orig) {
				t.Errorf("%s: %s is not sdk/'s", c.lang, w)
			}
		}
		for _, w := range wrote {
			if strings.HasSuffix(w, "_test.go") || strings.Contains(w, "node_modules") || w == "go.mod.txt" {
				t.Errorf("%s: wrote %s", c.lang, w)
			}
		}
	}
	if _, err := sdkfiles.Write(t.TempDir(), "rust"); err == nil || !strings.Contains(err.Error(), `no SDK for language "rust"`) {
		t.Errorf("Write rust: %v, want an error naming the language", err)
	}
}
