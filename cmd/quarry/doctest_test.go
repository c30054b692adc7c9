package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The docs are tests: every fenced ```sh, ```bash or ```console block of
// the Markdown files in docTestFiles is run, in order, by TestDocs (long
// tier, doctest_long_test.go). This file reads the blocks and their
// annotations; its tests are in the fast tier.
//
// A block is a script of commands (sh, bash), or one command after "$ "
// and the output it prints (console): the output is checked against what
// the command prints, "…" standing for any text and runs of white space
// for any white space (so a long line may be wrapped). HTML comments
// right before a block annotate it, several directives separated by ";":
//
//	<!-- doctest: skip (needs a NATS cluster) -->   not run: the reason is required
//	<!-- doctest: exit 1 -->                        its exit status (default 0)
//	<!-- doctest: output contains "refused" -->     a text its output must hold (repeatable)
//	<!-- doctest: output lacks "Pad See Ew" -->     a text its output must not hold (repeatable)
//	<!-- doctest: background -->                    left running (a server, a --follow); the next
//	                                                block starts once its output holds each text
//	                                                of "output contains"
//	<!-- doctest: stop background -->               Ctrl-C what runs in the background before it
//
// CONTRIBUTING.md ("The docs are tests") has what to run and a checklist.
// Not here yet: docs/deploy.md and docs/scaling.md (a NATS cluster),
// docs/performance.md (minutes of load), docs/plugin-abi.md and
// docs/RATIONALE.md.
var docTestFiles = []string{"README.md", "docs/plugins.md", "docs/relevance.md", "docs/api.md", "docs/teams.md", "docs/operations.md"}

// A docBlock is one command block of a Markdown file.
type docBlock struct {
	Line       int      // of the opening fence, from 1
	Lang       string   // sh, bash or console
	Code       string   // the commands; for console the one command, without "$ "
	Output     string   // console: the output shown under the command
	Skip       string   // why it is not run; "" when it is
	Exit       int      // the exit status it must end with
	Contains   []string // texts its output must hold
	Lacks      []string // texts its output must not hold
	Background bool     // left running until the doc's end or a "stop background"
	Stop       bool     // Ctrl-C the background commands before this block
}

var (
	fenceRe      = regexp.MustCompile("^( *)(```+|~~~+) *([A-Za-z0-9_-]*)")
	annotationRe = regexp.MustCompile(`^ *<!-- *doctest:(.*)-->\s*$`)
	runLangs     = map[string]bool{"sh": true, "bash": true, "console": true}
)

// parseDocBlocks returns the command blocks of a Markdown text in order,
// or an error naming the line of the first annotation or block it cannot
// read.
func parseDocBlocks(md string) ([]docBlock, error) {
	lines := strings.Split(md, "\n")
	var blocks []docBlock
	var pending []string // directives of the annotations just above
	pendingLine := 0
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := annotationRe.FindStringSubmatch(line); m != nil {
			if pending == nil {
				pendingLine = i + 1
			}
			ds, err := splitDirectives(m[1])
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", i+1, err)
			}
			pending = append(pending, ds...)
			continue
		}
		if strings.Contains(line, "<!--") && strings.Contains(line, "doctest") {
			return nil, fmt.Errorf("line %d: an annotation is one line: <!-- doctest: DIRECTIVE; … -->", i+1)
		}
		m := fenceRe.FindStringSubmatch(line)
		if m == nil {
			if pending != nil && strings.TrimSpace(line) != "" {
				return nil, fmt.Errorf("line %d: a doctest annotation must be right before a ```sh, ```bash or ```console block", pendingLine)
			}
			continue
		}
		indent, fence, lang := len(m[1]), m[2], m[3]
		start := i + 1
		var body []string
		for i++; i < len(lines); i++ {
			l := lines[i]
			if t := strings.TrimLeft(l, " "); strings.HasPrefix(t, fence[:1]) && strings.Trim(t, fence[:1]+" ") == "" && len(strings.TrimRight(t, " ")) >= len(fence) {
				break
			}
			body = append(body, trimIndent(l, indent))
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: the block is not closed", start)
		}
		if !runLangs[lang] {
			if pending != nil {
				return nil, fmt.Errorf("line %d: an annotated block must be ```sh, ```bash or ```console, not %q", start, lang)
			}
			continue
		}
		b := docBlock{Line: start, Lang: lang, Code: strings.Join(body, "\n")}
		if lang == "console" {
			var err error
			if b.Code, b.Output, err = splitConsole(body); err != nil {
				return nil, fmt.Errorf("line %d: %v", start, err)
			}
		}
		for _, d := range pending {
			if err := b.apply(d); err != nil {
				return nil, fmt.Errorf("line %d: %v", pendingLine, err)
			}
		}
		pending = nil
		blocks = append(blocks, b)
	}
	if pending != nil {
		return nil, fmt.Errorf("line %d: a doctest annotation must be right before a ```sh, ```bash or ```console block", pendingLine)
	}
	return blocks, nil
}

// trimIndent removes up to n leading spaces (a fence's indentation in a
// list item).
func trimIndent(l string, n int) string {
	for range n {
		if !strings.HasPrefix(l, " ") {
			break
		}
		l = l[1:]
	}
	return l
}

// splitConsole reads a console block: "$ " and one command (continued
// over lines ending in "\"), then the output.
func splitConsole(body []string) (cmd, output string, err error) {
	if len(body) == 0 || !strings.HasPrefix(body[0], "$ ") {
		return "", "", fmt.Errorf(`a console block starts with "$ " and its command`)
	}
	n := 1
	for n < len(body) && strings.HasSuffix(body[n-1], `\`) {
		n++
	}
	cmd = strings.TrimPrefix(strings.Join(body[:n], "\n"), "$ ")
	for _, l := range body[n:] {
		if strings.HasPrefix(l, "$ ") {
			return "", "", fmt.Errorf("a console block holds one command and its output; put %q in a block of its own", l)
		}
	}
	return cmd, strings.Join(body[n:], "\n"), nil
}

// splitDirectives splits an annotation's text at the ";" outside quotes.
func splitDirectives(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	quoted, escaped := false, false
	for _, r := range s {
		switch {
		case escaped:
			escaped = false
		case quoted && r == '\\':
			escaped = true
		case r == '"':
			quoted = !quoted
		case r == ';' && !quoted:
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteRune(r)
	}
	if quoted {
		return nil, fmt.Errorf("unbalanced quote in %q", s)
	}
	out = append(out, strings.TrimSpace(cur.String()))
	return out, nil
}

// apply sets what one directive says.
func (b *docBlock) apply(d string) error {
	word, rest, _ := strings.Cut(d, " ")
	rest = strings.TrimSpace(rest)
	switch {
	case word == "skip":
		b.Skip = strings.TrimSuffix(strings.TrimPrefix(rest, "("), ")")
		if b.Skip == "" {
			return fmt.Errorf("skip needs a reason: skip (why)")
		}
	case word == "exit":
		n, err := strconv.Atoi(rest)
		if err != nil {
			return fmt.Errorf("exit needs a number, got %q", rest)
		}
		b.Exit = n
	case word == "output" && strings.HasPrefix(rest, "contains "):
		s, err := strconv.Unquote(strings.TrimSpace(strings.TrimPrefix(rest, "contains ")))
		if err != nil || s == "" {
			return fmt.Errorf(`output contains needs a quoted text, got %q`, rest)
		}
		b.Contains = append(b.Contains, s)
	case word == "output" && strings.HasPrefix(rest, "lacks "):
		s, err := strconv.Unquote(strings.TrimSpace(strings.TrimPrefix(rest, "lacks ")))
		if err != nil || s == "" {
			return fmt.Errorf(`output lacks needs a quoted text, got %q`, rest)
		}
		b.Lacks = append(b.Lacks, s)
	case d == "background":
		b.Background = true
	case d == "stop background":
		b.Stop = true
	default:
		return fmt.Errorf("unknown doctest directive %q (skip, exit, output contains, output lacks, background, stop background)", d)
	}
	return nil
}

// outputMatches reports whether a command's output is what a console
// block shows: "…" stands for any text (and the white space around it),
// and a run of white space for any other run of white space.
func outputMatches(shown, got string) bool {
	words := strings.Fields(shown)
	var re strings.Builder
	re.WriteString(`(?s)^\s*`)
	for i, w := range words {
		switch {
		case i == 0:
		case w == "…" || words[i-1] == "…":
			re.WriteString(`\s*`)
		default:
			re.WriteString(`\s+`)
		}
		for j, part := range strings.Split(w, "…") {
			if j > 0 {
				re.WriteString(".*")
			}
			re.WriteString(regexp.QuoteMeta(part))
		}
	}
	re.WriteString(`\s*$`)
	return regexp.MustCompile(re.String()).MatchString(got)
}

func TestParseDocBlocks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, md string
		want     []docBlock
		err      string
	}{
		{"a plain block", "text\n\n```sh\nquarry index ls\n```\n",
			[]docBlock{{Line: 3, Lang: "sh", Code: "quarry index ls"}}, ""},
		{"other languages are not run", "```json\n{}\n```\n```\n$ x\n```\n```c\nint x;\n```\n", nil, ""},
		{"indented code is not a block", "    quarry index ls\n", nil, ""},
		{"annotations", "<!-- doctest: exit 1; output contains \"a;b\" -->\n<!-- doctest: output contains \"c \\\"d\\\"\" -->\n```bash\nfalse\n```\n",
			[]docBlock{{Line: 3, Lang: "bash", Code: "false", Exit: 1, Contains: []string{"a;b", `c "d"`}}}, ""},
		{"lacks", "<!-- doctest: output lacks \"Pad See Ew\" -->\n```sh\nquarry search dishes pad\n```\n",
			[]docBlock{{Line: 2, Lang: "sh", Code: "quarry search dishes pad", Lacks: []string{"Pad See Ew"}}}, ""},
		{"skip", "<!-- doctest: skip (needs a NATS cluster) -->\n```sh\nquarry init\n```\n",
			[]docBlock{{Line: 2, Lang: "sh", Code: "quarry init", Skip: "needs a NATS cluster"}}, ""},
		{"background and stop", "<!-- doctest: background; output contains \"serving\" -->\n```sh\nquarry serve\n```\n<!-- doctest: stop background -->\n```sh\nquarry serve --demo\n```\n",
			[]docBlock{{Line: 2, Lang: "sh", Code: "quarry serve", Background: true, Contains: []string{"serving"}},
				{Line: 6, Lang: "sh", Code: "quarry serve --demo", Stop: true}}, ""},
		{"in a list item", "- a list\n\n  ```sh\n  quarry team ls\n    --json\n  ```\n",
			[]docBlock{{Line: 3, Lang: "sh", Code: "quarry team ls\n  --json"}}, ""},
		{"console", "```console\n$ quarry get menu \\\n  x\nquarry get: not found\n…\n```\n",
			[]docBlock{{Line: 1, Lang: "console", Code: "quarry get menu \\\n  x", Output: "quarry get: not found\n…"}}, ""},
		{"a longer fence holds a shorter one", "````sh\necho '```'\n````\n",
			[]docBlock{{Line: 1, Lang: "sh", Code: "echo '```'"}}, ""},
		{"skip without a reason", "<!-- doctest: skip -->\n```sh\nx\n```\n", nil, "line 1: skip needs a reason"},
		{"unknown directive", "<!-- doctest: timeout 5s -->\n```sh\nx\n```\n", nil, `unknown doctest directive "timeout 5s"`},
		{"annotation before text", "<!-- doctest: exit 1 -->\ntext\n```sh\nx\n```\n", nil, "line 1: a doctest annotation must be right before"},
		{"annotation before another language", "<!-- doctest: exit 1 -->\n```json\n{}\n```\n", nil, `not "json"`},
		{"annotation at the end", "```sh\nx\n```\n<!-- doctest: exit 1 -->\n", nil, "line 4: a doctest annotation must be right before"},
		{"misspelt annotation", "<!-- doctest exit 1 -->\n```sh\nx\n```\n", nil, "line 1: an annotation is one line"},
		{"blank lines between", "<!-- doctest: exit 2 -->\n\n```sh\nx\n```\n", []docBlock{{Line: 3, Lang: "sh", Code: "x", Exit: 2}}, ""},
		{"two console commands", "```console\n$ a\n$ b\n```\n", nil, "one command and its output"},
		{"console without $", "```console\na\n```\n", nil, `starts with "$ "`},
		{"not closed", "```sh\nx\n", nil, "line 1: the block is not closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDocBlocks(tc.md)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestOutputMatches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		shown, got string
		want       bool
	}{
		{"deleted index dishes", "deleted index dishes\n", true},
		{"deleted index dishes", "deleted index menu\n", false},
		{"a long line\nwrapped", "a long line wrapped", true},
		{"a  b", "a\tb", true},
		{"ab", "a b", false},
		{"1344 hits in … (4/4 shards)", "1344 hits in 11.3 ms (4/4 shards)", true},
		{"1344 hits in … (4/4 shards)", "69 hits in 11.3 ms (4/4 shards)", false},
		{"…\nlast line", "first\nsecond\nlast line", true},
		{"first\n…", "first\nsecond", true},
		{"first", "first\nsecond", false},
		{"x … y", "x y", true},
		{"a.b (c)", "aXb (c)", false},
	} {
		if got := outputMatches(tc.shown, tc.got); got != tc.want {
			t.Errorf("outputMatches(%q, %q) = %v, want %v", tc.shown, tc.got, got, tc.want)
		}
	}
}

// TestDocBlocksRead: every file TestDocs runs reads without an error, and
// none holds a command outside a fenced block (an indented one would not
// be run).
func TestDocBlocksRead(t *testing.T) {
	t.Parallel()
	for _, f := range docTestFiles {
		raw, err := os.ReadFile("../../" + f)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := parseDocBlocks(string(raw))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(blocks) == 0 {
			t.Errorf("%s: no command blocks", f)
		}
		fenced := false
		for i, l := range strings.Split(string(raw), "\n") {
			if fenceRe.MatchString(l) {
				fenced = !fenced
			}
			if t2 := strings.TrimLeft(l, " "); !fenced && len(l)-len(t2) >= 4 && (strings.HasPrefix(t2, "quarry ") || strings.HasPrefix(t2, "curl ") || strings.HasPrefix(t2, "$ ")) {
				t.Errorf("%s:%d: a command outside a fenced block, which TestDocs would not run: fence it (```sh)", f, i+1)
			}
		}
	}
}
