package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMEFilesExist: every file the README's commands name is in the
// repository, or made by an earlier command of the README (a /tmp path
// after -o or >), or is the operator's own (a line saying so).
func TestREADMEFilesExist(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseDocBlocks(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, b := range blocks {
		lines = append(lines, strings.Split(b.Code, "\n")...)
	}
	made := map[string]bool{}
	checked := 0
	for _, line := range lines {
		cmd, comment, _ := strings.Cut(line, " # ")
		fields := strings.Fields(cmd)
		for i, w := range fields {
			w = strings.Trim(w, `"'()`)
			if _, file, ok := strings.Cut(w, "="); ok && !strings.HasPrefix(w, "-") {
				w = file // --pipeline INDEX=FILE
			}
			w = strings.TrimPrefix(w, "@")
			if !looksLikeFile(w) {
				continue
			}
			checked++
			switch {
			case i > 0 && (fields[i-1] == "-o" || fields[i-1] == ">"):
				made[w] = true
			case strings.HasPrefix(w, "/tmp/"):
				if !made[w] {
					t.Errorf("README names %s before any command makes it: %s", w, strings.TrimSpace(line))
				}
			case strings.HasPrefix(w, "/") || strings.Contains(comment, "your "):
				// a path on the operator's machine, or their own file
			default:
				if _, err := os.Stat(filepath.Join("../..", w)); err != nil {
					t.Errorf("README names %s, which is not in the repository: %s", w, strings.TrimSpace(line))
				}
			}
		}
	}
	if checked < 8 {
		t.Fatalf("only %d file names found in the README's commands: is the parser still right?", checked)
	}
}

// looksLikeFile reports whether a word of a README command names a file.
func looksLikeFile(w string) bool {
	if strings.Contains(w, "://") || strings.HasPrefix(w, "localhost:") || strings.HasPrefix(w, "./cmd/") || strings.HasPrefix(w, "./...") {
		return false
	}
	for _, ext := range []string{".json", ".ndjson", ".wasm", ".conf", ".creds", ".wat", ".c", ".md"} {
		if strings.HasSuffix(w, ext) {
			return true
		}
	}
	return strings.HasPrefix(w, "examples/") || strings.HasPrefix(w, "docs/")
}

// readmeCommands returns the commands of README.md's "Set up" section, in
// order: the demo, the tests, and the search to try.
func readmeCommands(t *testing.T) (demo, tests, search string) {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, setup, ok := strings.Cut(string(raw), "\n## Set up\n")
	if !ok {
		t.Fatal(`README.md has no "## Set up" section`)
	}
	setup, _, _ = strings.Cut(setup, "\n## ")
	blocks, err := parseDocBlocks(setup)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, b := range blocks {
		cmds = append(cmds, strings.TrimSpace(b.Code))
	}
	if len(cmds) != 3 {
		t.Fatalf("README's Set up section has %d commands, want 3 (demo, tests, a search): %q", len(cmds), cmds)
	}
	return cmds[0], cmds[1], cmds[2]
}

// The fast tier CI runs is the README's test command, exactly as printed:
// .ci/run has the line itself.
func TestCIRunsTheREADMETests(t *testing.T) {
	t.Parallel()
	_, tests, _ := readmeCommands(t)
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(ci), "\n") {
		if strings.TrimSpace(l) == tests {
			return
		}
	}
	t.Errorf(".ci/run does not run the README's test command %q as printed", tests)
}
