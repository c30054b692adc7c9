// Package sdkfiles holds, inside the quarry binary, the SDK files a plugin
// of each language builds with, so that `quarry plugin new` writes a
// plugin folder that builds anywhere, with no Quarry checkout: the Go SDK
// module's sources (sdk/go.mod, sdk/*.go, sdk/abi, sdk/sdktest; no tests),
// the C SDK's header (sdk/c/*.h) and the AssemblyScript SDK's npm package
// (sdk/assemblyscript: package.json and the files it publishes; no
// node_modules, no tests).
//
// go:embed reaches only files under the package's own directory, so the
// files are copies of sdk/, under _sdk/ (go, c and assemblyscript, one
// folder per language, each as its build finds it). The leading
// underscore keeps the go tool from seeing the Go copies as packages of
// this module (./... skips the folder), and sdk/go.mod is kept as
// go.mod.txt: a folder holding a go.mod is another module, which go:embed
// refuses. After changing the SDK, run
//
//	go generate ./internal/sdkfiles
//
// TestCopiesCurrent fails when the copies differ from sdk/ (a file
// changed, added or removed), so the binary never carries an SDK other
// than its checkout's.
package sdkfiles

//go:generate go test -run TestCopiesCurrent -update .

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Langs are the languages with an SDK, as quarry plugin new names them.
var Langs = []string{"go", "c", "assemblyscript"}

//go:embed _sdk
var copies embed.FS

// storedGoMod is the name sdk/go.mod has among the copies.
const storedGoMod = "go.mod.txt"

// Files returns the language's SDK files by their slash-separated paths
// from the SDK's root as its build uses it: the Go module's root (go.mod,
// sdk.go, abi/abi.go, ...), the C header's folder (quarry.h), the npm
// package's root (package.json, assembly/index.ts, ...).
func Files(lang string) (map[string][]byte, error) {
	root := "_sdk/" + lang
	if !slices.Contains(Langs, lang) {
		return nil, fmt.Errorf("sdkfiles: no SDK for language %q (want one of %s)", lang, strings.Join(Langs, ", "))
	}
	out := map[string][]byte{}
	err := fs.WalkDir(copies, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := copies.ReadFile(p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, root+"/")
		if rel == storedGoMod {
			rel = "go.mod"
		}
		out[rel] = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sdkfiles: the embedded %s SDK: %w", lang, err)
	}
	return out, nil
}

// Write writes the language's SDK files (Files) under dir, making the
// folders they need; it returns the paths it wrote, relative to dir and
// sorted.
func Write(dir, lang string) ([]string, error) {
	files, err := Files(lang)
	if err != nil {
		return nil, err
	}
	var wrote []string
	for rel, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("sdkfiles: writing the %s SDK: %w", lang, err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, fmt.Errorf("sdkfiles: writing the %s SDK: %w", lang, err)
		}
		wrote = append(wrote, rel)
	}
	slices.Sort(wrote)
	return wrote, nil
}
