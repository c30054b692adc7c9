package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/spf13/cobra"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/sdkfiles"
	"github.com/quarrysearch/quarry/internal/subject"
)

// plugin new: a plugin folder that builds and passes its test as
// generated, in Go, C or AssemblyScript, for either hook.
//
// The folder holds the SDK it builds with, written from the copy quarry
// carries (internal/sdkfiles), wherever plugin new runs: a quarry from go
// install or a release has no checkout to point at, and a folder that
// pointed into one stopped building when moved or committed elsewhere.
// Inside a checkout it does the same rather than follow the checkout's
// sdk/: one way to test, and the SDK is always the one of the quarry that
// runs the plugin (plugin run, dev); TestCopiesCurrent keeps the copy
// equal to sdk/. --sdk DIR is for work on the SDK itself.

// pluginLangs are the languages plugin new writes, each with its files.
var pluginLangs = []string{"go", "c", "assemblyscript"}

// newPlugin is what the templates see.
type newPlugin struct {
	Name, Kind, Lang string
	// SDK is where the build finds the language's SDK: "./quarry-sdk",
	// the copy plugin new writes into the folder (Go, AssemblyScript), or
	// with --sdk the absolute path of that checkout's Go module or npm
	// package; "." for C, whose header is copied beside the source.
	SDK string
	// SDKNote says in the folder's README where its SDK came from.
	SDKNote string
	// Copied is true when the folder holds its SDK (not with --sdk but
	// for C's header).
	Copied bool
	// Ranker is Kind == "ranker".
	Ranker bool
}

// sdkFolder is the folder of a plugin folder that holds its SDK, written
// from the copy built into quarry (internal/sdkfiles).
const sdkFolder = "quarry-sdk"

// pluginNewAbout is plugin new's help: where the folder's SDK comes from.
const pluginNewAbout = `Writes a plugin folder (the plugin, a test, build.sh, sample requests and their
expected answers) that builds and passes its test as generated.

The folder builds anywhere, with no Quarry checkout: quarry carries the SDK of its
own version and writes it into the folder, which builds with it (Go: the module in
` + sdkFolder + `/, which go.mod replaces the SDK module with; AssemblyScript: the npm
package in ` + sdkFolder + `/, which package.json depends on by path; C: quarry.h beside
the source). Inside a Quarry checkout too. --sdk DIR builds against a checkout's
sdk directory instead, for work on the SDK itself: go.mod or package.json points
at it, a C plugin copies its header.`

func pluginNewCmd(e *env) *cobra.Command {
	cmd := newCommand("new NAME --lang go|c|assemblyscript --kind rewriter|ranker", "write a plugin folder (plugin, test, build.sh, sample requests) that builds and passes its test", pluginNewAbout, 1, 1)
	fs := cmd.Flags()
	lang := fs.String("lang", "", "the plugin's language: go, c or assemblyscript")
	kind := fs.String("kind", "", "the plugin's hook: rewriter or ranker")
	dir := fs.String("dir", "", "the folder to write (default ./NAME); it must not exist or be empty")
	sdk := fs.String("sdk", "", "a Quarry checkout's sdk directory to build against (default: the SDK built into quarry, written into the folder)")
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		out, err := pluginNew(pos[0], *lang, *kind, *dir, *sdk)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "wrote %s: build with ./build.sh, test with ./test.sh (README.md)\n", out)
		return nil
	}
	return cmd
}

// pluginNew checks its input and writes the plugin folder, with the SDK
// built into quarry unless sdk names a checkout's sdk directory; it
// returns the folder's path.
func pluginNew(name, lang, kind, dir, sdk string) (string, error) {
	if err := subject.ValidIndexName(name); err != nil {
		return "", api.BadRequest("plugin name %q: use 1-64 of a-z, 0-9, '-' and '_', starting with a letter or digit", name)
	}
	files, ok := pluginTemplates[lang]
	if !ok {
		return "", api.BadRequest("--lang %q: want one of %s", lang, strings.Join(pluginLangs, ", "))
	}
	if kind != "rewriter" && kind != "ranker" {
		return "", api.BadRequest("--kind %q: want rewriter or ranker", kind)
	}
	if dir == "" {
		dir = name
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return "", api.BadRequest("--dir %s: the folder exists and is not empty", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("plugin new: %w", err)
	}
	p := newPlugin{Name: name, Kind: kind, Lang: lang, Ranker: kind == "ranker"}
	// checkout is the --sdk directory; "" for the SDK built into quarry.
	checkout := ""
	if sdk != "" {
		var err error
		if checkout, err = checkSDK(sdk); err != nil {
			return "", err
		}
	}
	p.Copied = checkout == "" || lang == "c"
	switch {
	case lang == "c" && checkout == "":
		p.SDK, p.SDKNote = ".", "quarry.h, the C SDK's header, as this quarry carries it"
	case lang == "c":
		p.SDK, p.SDKNote = ".", "quarry.h, copied from "+filepath.Join(checkout, "c", "quarry.h")
	case checkout == "":
		p.SDK = "./" + sdkFolder
		p.SDKNote = sdkFolder + "/, the Go module github.com/quarrysearch/quarry/sdk as this quarry carries it (go.mod replaces the module with it)"
		if lang == "assemblyscript" {
			p.SDKNote = sdkFolder + "/, the npm package @quarrysearch/sdk as this quarry carries it (package.json depends on it by path)"
		}
	case lang == "go":
		p.SDK, p.SDKNote = checkout, checkout+" (--sdk; go.mod replaces the module github.com/quarrysearch/quarry/sdk with it)"
	default:
		p.SDK = filepath.Join(checkout, "assemblyscript")
		p.SDKNote = p.SDK + " (--sdk; package.json depends on it by path)"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("plugin new: %w", err)
	}
	write := func(file, text string, mode os.FileMode) error {
		file = strings.ReplaceAll(file, "NAME", name)
		t, err := template.New(file).Delims("[[", "]]").Parse(text)
		if err != nil {
			return fmt.Errorf("plugin new: template %s: %w", file, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, p); err != nil {
			return fmt.Errorf("plugin new: template %s: %w", file, err)
		}
		path := filepath.Join(dir, file)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("plugin new: %w", err)
		}
		if err := os.WriteFile(path, b.Bytes(), mode); err != nil {
			return fmt.Errorf("plugin new: %w", err)
		}
		return nil
	}
	for file, text := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(file, ".sh") {
			mode = 0o755
		}
		if err := write(file, text, mode); err != nil {
			return "", err
		}
	}
	for file, text := range commonTemplates {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(file, ".sh") {
			mode = 0o755
		}
		if err := write(file, text, mode); err != nil {
			return "", err
		}
	}
	// The SDK: the header beside a C plugin's source; the module or the
	// npm package in quarry-sdk/, unless --sdk points the build at a
	// checkout.
	switch {
	case lang == "c" && checkout != "":
		h, err := os.ReadFile(filepath.Join(checkout, "c", "quarry.h"))
		if err != nil {
			return "", fmt.Errorf("plugin new: the C SDK: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "quarry.h"), h, 0o644); err != nil {
			return "", fmt.Errorf("plugin new: %w", err)
		}
	case lang == "c":
		if _, err := sdkfiles.Write(dir, lang); err != nil {
			return "", fmt.Errorf("plugin new: %w", err)
		}
	case checkout == "":
		if _, err := sdkfiles.Write(filepath.Join(dir, sdkFolder), lang); err != nil {
			return "", fmt.Errorf("plugin new: %w", err)
		}
	}
	return dir, nil
}

// checkSDK returns the absolute path of dir, a Quarry checkout's sdk
// directory (--sdk): it must hold the Go SDK's go.mod and the C SDK's
// header.
func checkSDK(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("plugin new: --sdk: %w", err)
	}
	mod, err := os.ReadFile(filepath.Join(abs, "go.mod"))
	if err == nil && strings.HasPrefix(string(mod), "module github.com/quarrysearch/quarry/sdk\n") {
		_, err = os.Stat(filepath.Join(abs, "c", "quarry.h"))
	} else if err == nil {
		err = errors.New("another module")
	}
	if err != nil {
		return "", api.BadRequest("--sdk %s: not a Quarry sdk directory (want go.mod of github.com/quarrysearch/quarry/sdk and c/quarry.h)", dir)
	}
	return abs, nil
}

// The files every plugin folder has: sample requests, their expected
// answers, the configuration, the test script and a README.
var commonTemplates = map[string]string{
	"requests.ndjson": `[[if .Ranker]]{"q":"noodles","candidates":[{"id":"a","score":1,"fields":{"rating":4.5}},{"id":"b","score":2},{"id":"c","score":1.5,"fields":{"rating":3}}]}
{"q":"noodles","candidates":[{"id":"a","score":1,"fields":{"rating":"n/a"}},{"id":"b","score":2,"fields":{"rating":1}}]}
{"q":"nothing matched","candidates":[]}
[[else]]{"q":"Spicy NOODLES"}
{"q":"already lower","size":20}
{"q":"","context":{"user":"u1"}}
[[end]]`,
	"expected.ndjson": `[[if .Ranker]]{"ranked":[{"id":"a","score":3.25},{"id":"c","score":3},{"id":"b","score":2}]}
{"ranked":[{"id":"b","score":2.5},{"id":"a","score":1}]}
{"ranked":[]}
[[else]]{"q":"spicy noodles"}
{}
{}
[[end]]`,
	".gitignore": "[[if eq .Lang \"assemblyscript\"]]node_modules/\n[[end]]*.wasm\ngot.ndjson\n",
	"config.json": `[[if .Ranker]]{"field": "rating", "weight": 0.5}
[[else]]{}
[[end]]`,
	"test.sh": `#!/bin/sh
# Builds [[.Name]].wasm and runs it on the sample requests with the
# broker's own host and limits (quarry plugin run); the answers must be
# expected.ndjson. QUARRY names the quarry binary (default: quarry on PATH).
set -eu
cd "$(dirname "$0")"
./build.sh
[[if eq .Lang "go"]]GOWORK=off go test ./...
[[end]]${QUARRY:-quarry} plugin run [[.Name]].wasm --kind [[.Kind]] --config config.json requests.ndjson > got.ndjson
diff -u expected.ndjson got.ndjson
echo "ok: [[.Name]].wasm answers as expected.ndjson says"
`,
	"README.md": `# [[.Name]]: a Quarry [[.Kind]] in [[if eq .Lang "go"]]Go[[else if eq .Lang "c"]]C[[else]]AssemblyScript[[end]]

Written by ` + "`quarry plugin new`" + `. [[if .Ranker]]Each candidate's score becomes
score + weight × a numeric field (config.json: ` + "`" + `{"field": "rating", "weight": 0.5}` + "`" + `);
the host sorts by it.[[else]]It lower-cases the search text.[[end]]

    ./build.sh        # [[.Name]].wasm
    ./test.sh         # build, then run it on requests.ndjson; the answers must be expected.ndjson

Then try it on an index. The first version goes live with --activate
(after a replay, quarry plugin test, if you like); each next one is
pushed and canaried against the live one, named by its digest (what push
prints, or the start of its sha256):

    quarry plugin push INDEX [[.Name]] [[.Name]].wasm --kind [[.Kind]] --config config.json[[if .Ranker]] --fields rating[[end]] --activate
    # ... edit, ./test.sh, then:
    quarry plugin push INDEX [[.Name]] [[.Name]].wasm --kind [[.Kind]] --config config.json[[if .Ranker]] --fields rating[[end]]
    quarry plugin canary INDEX [[.Name]] $(sha256sum [[.Name]].wasm | cut -c1-12) --percent 10

The SDK: [[.SDKNote]].[[if .Copied]]
The folder builds on its own, with no Quarry checkout: commit it whole.[[end]]
The ABI: Quarry's docs/plugin-abi.md.
`,
}

// cBuildSh is a C plugin's build.sh. It takes clang, else the newest
// clang-NN on PATH (Debian's clang-14 package installs clang-14 alone;
// CLANG overrides both),
// and wasm-ld, else the newest wasm-ld-NN (Debian's lld-14), and says what
// to install when one is missing.
const cBuildSh = `#!/bin/sh
# Builds [[.Name]].wasm with clang and lld (Debian: apt-get install clang
# lld); quarry.h is the C SDK. CLANG names the compiler (default: clang,
# else the newest clang-NN on PATH).
set -eu
cd "$(dirname "$0")"

# newest NAME prints the path of NAME on PATH, else of the newest NAME-NN.
newest() {
  if command -v "$1"; then return 0; fi
  best="" bestv=-1 oldifs=$IFS
  IFS=:
  for d in $PATH; do
    for f in "${d:-.}/$1"-[0-9]*; do
      v=${f##*/"$1"-}
      case $v in *[!0-9]*) continue ;; esac
      if [ -x "$f" ] && [ "$v" -gt "$bestv" ]; then best=$f bestv=$v; fi
    done
  done
  IFS=$oldifs
  if [ -n "$best" ]; then echo "$best"; fi
}

cc=${CLANG:-$(newest clang)}
if [ -z "$cc" ]; then
  echo "build.sh: no clang or clang-NN on PATH: install clang with the WebAssembly target, and lld (Debian, Ubuntu: apt-get install clang lld), or set CLANG to one" >&2
  exit 1
fi
ld=""
if ! command -v wasm-ld >/dev/null; then
  l=$(newest wasm-ld)
  if [ -n "$l" ]; then ld="-fuse-ld=$l"; fi
fi
if ! "$cc" --target=wasm32 -O2 -mbulk-memory -nostdlib -Wl,--no-entry -Wall $ld -I . -o [[.Name]].wasm [[.Name]].c; then
  if [ -z "$ld" ] && ! command -v wasm-ld >/dev/null; then
    echo "build.sh: $cc failed, and no wasm-ld or wasm-ld-NN is on PATH: install lld (Debian, Ubuntu: apt-get install lld)" >&2
  fi
  exit 1
fi
`

// pluginTemplates are each language's own files.
var pluginTemplates = map[string]map[string]string{
	"go": {
		"go.mod": `module quarry.local/plugins/[[.Name]]

go 1.26.0

require github.com/quarrysearch/quarry/sdk v0.0.0

replace github.com/quarrysearch/quarry/sdk => [[.SDK]]
`,
		"build.sh": `#!/bin/sh
set -eu
cd "$(dirname "$0")"
GOWORK=off GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o [[.Name]].wasm .
`,
		"main.go": `[[if .Ranker]]// Command [[.Name]] is a Quarry ranker: each candidate's score becomes
// score + weight × a numeric field. Configuration (both optional):
// {"field": "rating", "weight": 0.5}, defaults "rating" and 1.
package main

import (
	"encoding/json"
	"fmt"

	"github.com/quarrysearch/quarry/sdk"
	"github.com/quarrysearch/quarry/sdk/abi"
)

type config struct {
	Field  string  ` + "`json:\"field\"`" + `
	Weight float64 ` + "`json:\"weight\"`" + `
}

var cfg *config

func init() { sdk.BatchRanker(rank) }

func rank(b *sdk.Batch) error {
	if cfg == nil {
		c := config{Field: "rating", Weight: 1}
		if raw := sdk.Config(); len(raw) > 0 {
			if err := json.Unmarshal(raw, &c); err != nil {
				return fmt.Errorf("[[.Name]]: configuration: %w", err)
			}
		}
		cfg = &c
	}
	if col := b.Numbers(cfg.Field); col != nil { // read in place; NaN: missing
		for i, v := range col {
			if v == v {
				b.Scores[i] += cfg.Weight * v
			}
		}
		return nil
	}
	for i := range b.Scores { // a values column: some value is not a number
		if v := b.Value(cfg.Field, i); v.Kind == abi.KindNumber {
			b.Scores[i] += cfg.Weight * v.Num
		}
	}
	return nil
}
[[else]]// Command [[.Name]] is a Quarry rewriter: it lower-cases the search text.
package main

import (
	"strings"

	"github.com/quarrysearch/quarry/sdk"
)

func init() { sdk.Rewriter(rewrite) }

func rewrite(r *sdk.RewriteRequest) error {
	r.Q = strings.ToLower(r.Q)
	return nil
}
[[end]]
func main() {}
`,
		"main_test.go": `package main

import (
	"testing"

	"github.com/quarrysearch/quarry/sdk/abi"
	"github.com/quarrysearch/quarry/sdk/sdktest"
)
[[if .Ranker]]
func TestRank(t *testing.T) {
	sdktest.SetConfig([]byte(` + "`" + `{"field": "rating", "weight": 0.5}` + "`" + `))
	resp, err := sdktest.Rank(&abi.RankRequest{Q: "noodles", Fields: []string{"rating"}, Candidates: []abi.Candidate{
		{ID: "a", Score: 1, Values: []abi.Value{{Kind: abi.KindNumber, Num: 4.5}}},
		{ID: "b", Score: 2, Values: []abi.Value{{}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []abi.Ranked{{Index: 0, Score: 3.25}, {Index: 1, Score: 2}}
	if len(resp.Ranked) != 2 || resp.Ranked[0] != want[0] || resp.Ranked[1] != want[1] {
		t.Fatalf("ranked %+v, want %+v", resp.Ranked, want)
	}
}
[[else]]
func TestRewrite(t *testing.T) {
	resp, err := sdktest.Rewrite(&abi.RewriteRequest{Q: "Spicy NOODLES", Size: 10})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Flags&abi.FlagQ == 0 || resp.Q != "spicy noodles" {
		t.Fatalf("rewrite: %+v, want q %q", resp, "spicy noodles")
	}
}
[[end]]`,
	},
	"c": {
		"build.sh": cBuildSh,
		"NAME.c": `[[if .Ranker]]/*
 * [[.Name]]: a Quarry ranker in C. Each candidate's score becomes
 * score + weight × a numeric field. Configuration (both optional):
 * {"field": "rating", "weight": 0.5}, defaults "rating" and 1.
 */
#include "quarry.h"

static int configured;
static double weight = 1;
static char field[64] = "rating";

static const char *configure(void) {
	quarry_bytes cfg, name;
	if (!quarry_config_get(&cfg)) {
		return "[[.Name]]: configuration too big";
	}
	if (quarry_json_number(cfg, "weight", &weight) < 0) {
		return "[[.Name]]: \"weight\" must be a number";
	}
	switch (quarry_json_string(cfg, "field", &name)) {
	case -1:
		return "[[.Name]]: \"field\" must be a string";
	case 1:
		if (name.len >= sizeof field) {
			return "[[.Name]]: \"field\" is too long";
		}
		__builtin_memcpy(field, name.ptr, name.len);
		field[name.len] = 0;
	}
	configured = 1;
	return 0;
}

static const char *rank(quarry_batch *b) {
	if (!configured) {
		const char *err = configure();
		if (err) {
			return err;
		}
	}
	int f = quarry_field(b, field);
	const double *col = quarry_numbers(b, f);
	for (uint32_t i = 0; f >= 0 && i < b->n; i++) {
		if (col) { /* read in place: NaN where missing */
			if (col[i] == col[i]) {
				b->scores[i] += weight * col[i];
			}
			continue;
		}
		quarry_value v; /* a values column: some value is not a number */
		quarry_value_of(b, f, i, &v);
		if (v.kind == QUARRY_NUMBER) {
			b->scores[i] += weight * v.num;
		}
	}
	return 0;
}

QUARRY_RANKER(rank)
[[else]]/*
 * [[.Name]]: a Quarry rewriter in C. It lower-cases the search text
 * (ASCII).
 */
#include "quarry.h"

static const char *rewrite(const quarry_rewrite_request *req, quarry_rewrite_response *resp) {
	uint8_t *q = quarry_scratch(req->q.len);
	if (!q && req->q.len) {
		return "[[.Name]]: out of memory";
	}
	int changed = 0;
	for (uint32_t i = 0; i < req->q.len; i++) {
		uint8_t c = req->q.ptr[i];
		if (c >= 'A' && c <= 'Z') {
			c += 'a' - 'A';
			changed = 1;
		}
		q[i] = c;
	}
	if (changed) {
		quarry_set_q(resp, q, req->q.len);
	}
	return 0;
}

QUARRY_REWRITER(rewrite)
[[end]]`,
	},
	"assemblyscript": {
		"package.json": `{
  "name": "[[.Name]]",
  "version": "0.1.0",
  "private": true,
  "type": "module",
  "scripts": {
    "build": "asc assembly/index.ts --config node_modules/@quarrysearch/sdk/asconfig.json -o [[.Name]].wasm"
  },
  "devDependencies": {
    "@quarrysearch/sdk": "file:[[.SDK]]",
    "assemblyscript": "0.28.20"
  }
}
`,
		"build.sh": `#!/bin/sh
# node and npm (Debian: apt-get install nodejs npm); the compiler is
# installed by npm, pinned in package.json.
set -eu
cd "$(dirname "$0")"
[ -x node_modules/.bin/asc ] || npm install --no-audit --no-fund
npm run --silent build
`,
		"assembly/index.ts": `[[if .Ranker]]// [[.Name]]: a Quarry ranker in AssemblyScript. Each candidate's score
// becomes score + weight × a numeric field. Configuration (both optional):
// {"field": "rating", "weight": 0.5}, defaults "rating" and 1.
import { registerRanker, Batch, config, jsonNumber, jsonString } from "@quarrysearch/sdk/assembly";
export { quarry_abi_v1, quarry_alloc, quarry_rewrite, quarry_rank } from "@quarrysearch/sdk/assembly";

let configured = false;
let field = "rating";
let weight: f64 = 1;

function rank(b: Batch): string | null {
  if (!configured) {
    const cfg = config();
    const w = jsonNumber(cfg, "weight");
    if (w == w) weight = w;
    const f = jsonString(cfg, "field");
    if (f !== null) field = f;
    configured = true;
  }
  const col = b.numbers(field); // read in place; NaN: missing
  for (let i = 0; i < b.length; i++) {
    const v = col !== null ? col[i] : b.value(field, i).kind == 1 ? b.number(field, i) : NaN;
    if (v == v) b.scores[i] += weight * v;
  }
  return null;
}

registerRanker(rank);
[[else]]// [[.Name]]: a Quarry rewriter in AssemblyScript. It lower-cases the
// search text.
import { registerRewriter, RewriteRequest } from "@quarrysearch/sdk/assembly";
export { quarry_abi_v1, quarry_alloc, quarry_rewrite, quarry_rank } from "@quarrysearch/sdk/assembly";

function rewrite(r: RewriteRequest): string | null {
  r.q = r.q.toLowerCase();
  return null;
}

registerRewriter(rewrite);
[[end]]`,
	},
}
