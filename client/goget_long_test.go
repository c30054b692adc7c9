//go:build long

package client_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// TestGoGet: a module outside this repository gets the client with `go
// get` alone, no replace, and builds and runs docs/api.md's program on a
// real node. The module proxy holds this tree as a release publishes it:
// the main module at a release version and each module it requires from
// this repository (the sdk) at the version its go.mod names, zipped as the
// go command zips a module; everything else comes from the module cache's
// download directory (a proxy too). While the sdk had no version of its
// own the main module required it at v0.0.0 with a replace, which the go
// command ignores outside the main module: that placeholder names no
// release, and the test refuses it (and pseudo-versions) by name.
func TestGoGet(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir()
	const release = "v0.99.0" // the version under test: any release
	publish(t, proxy, module.Version{Path: mf.Module.Mod.Path, Version: release}, root)
	for _, r := range mf.Require {
		sub, ok := strings.CutPrefix(r.Mod.Path, mf.Module.Mod.Path+"/")
		if !ok {
			continue
		}
		// A module of this repository is published by its tag,
		// <folder>/vX.Y.Z (CONTRIBUTING.md, "Releasing").
		if !regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(r.Mod.Version) || r.Mod.Version == "v0.0.0" {
			t.Fatalf("go.mod requires %s at %s, a placeholder no release tags (%s/vX.Y.Z): `go get` of this module cannot resolve it, as the replace directive is the main module's alone",
				r.Mod.Path, r.Mod.Version, sub)
		}
		publish(t, proxy, r.Mod, filepath.Join(root, sub))
	}

	gocache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	app := t.TempDir()
	env := append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(strings.TrimSpace(string(gocache)), "cache", "download")),
		"GOMODCACHE="+t.TempDir(), // nothing of this repository cached
		"GOFLAGS=-mod=mod -modcacherw", "GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = app, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	os.WriteFile(filepath.Join(app, "main.go"), []byte(docProgram(t, filepath.Join(root, "docs", "api.md"))), 0o644)
	run("mod", "init", "example.com/stranger")
	run("get", mf.Module.Mod.Path+"/client@"+release)
	run("mod", "tidy")
	if got, _ := os.ReadFile(filepath.Join(app, "go.mod")); strings.Contains(string(got), "replace") {
		t.Fatalf("the stranger's go.mod needed a replace:\n%s", got)
	}
	// What the program links: the client's own, no index or plugin runtime.
	for _, dep := range strings.Fields(run("list", "-deps", ".")) {
		for _, banned := range []string{"blevesearch", "tetratelabs/wazero", "nats-server", "google.golang.org/grpc"} {
			if strings.Contains(dep, banned) {
				t.Errorf("the program links %s", dep)
			}
		}
	}
	bin := filepath.Join(app, "stranger")
	run("build", "-o", bin, ".")

	ctx := context.Background()
	n, stop := startQuarry(ctx)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "QUARRY_NATS="+n.NATSURL())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the program: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "1 1" {
		t.Fatalf("the program printed %q, want the one document found: \"1 1\"", got)
	}
}

// publish writes module m, made from dir as the go command makes a module
// zip, into the file proxy at proxy: @v/list, .info, .mod and .zip.
func publish(t *testing.T, proxy string, m module.Version, dir string) {
	t.Helper()
	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(proxy, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(at, m.Version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if err := modzip.CreateFromDir(w, m, dir); err != nil {
		t.Fatalf("zip %s from %s: %v", m, dir, err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		m.Version + ".mod":  gomod,
		m.Version + ".info": []byte(`{"Version":"` + m.Version + `","Time":"2026-12-05T00:00:00Z"}`),
		"list":              []byte(m.Version + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// docProgram is the Go block of doc's section "The Go client".
func docProgram(t *testing.T, doc string) string {
	t.Helper()
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## The Go client\n")
	if ok {
		sec, _, _ = strings.Cut(sec, "\n## ")
		_, sec, ok = strings.Cut(sec, "\n```go\n")
	}
	prog, _, closed := strings.Cut(sec, "\n```\n")
	if !ok || !closed {
		t.Fatalf("%s: no ```go block under \"## The Go client\"", doc)
	}
	return prog + "\n"
}
