package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
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
