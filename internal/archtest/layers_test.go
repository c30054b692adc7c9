package archtest

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/quarrysearch/quarry"

// roof are the services and the packages above them: the client, the
// HTTP door, the composition root (node) and the commands. No package
// under internal/ imports one (TestImportsFlowDown), nor does its tests
// (TestInternalTestsStayDown), but for testRoofImports.
var roof = []string{"broker", "searcher", "indexer", "registry", "client", "httpapi", "node", "cmd/"}

// testRoofImports are the tests under internal/ known to import a roof
// package, each with why; any other is a failure. They are test-only
// arrows (no package's code imports them) left for a follow-up.
var testRoofImports = map[[2]string]string{
	// Runs the quarry binary as an operator deploys it and talks to it
	// as users do: a roof package that lives under internal/.
	{"internal/clustertest", "client"}: "the real-process cluster test uses the Go client",
	// Checks the embedded demo pipeline against examples/pipelines with
	// the broker's own pipeline-file reader.
	{"internal/demo", "broker"}: "TestEmbeddedCurrent reads the pipeline with broker.ReadPipelineFile",
}

// forbidden lists, per package prefix, module packages it must not import.
var forbidden = []struct {
	from string
	not  []string
	// but are exceptions to not.
	but []string
}{
	// Wire types import nothing else of Quarry but subject names.
	{"api", []string{"internal/", "client", "broker", "searcher", "indexer", "httpapi", "node", "cmd/"}, nil},
	// internal/ is the ground: nothing under it imports a service or the
	// top layer (see roof).
	{"internal", roof, nil},
	// Shared internals stay below the services.
	{"internal/subject", []string{"internal/", "client", "broker", "searcher", "indexer"}, nil},
	{"internal/wire", []string{"internal/meta", "internal/shard", "client", "broker", "searcher", "indexer"}, nil},
	// Small ground packages of one job each import nothing else of
	// Quarry's internals.
	{"internal/gather", []string{"internal/", "client", "broker", "searcher", "indexer"}, nil},
	{"internal/backoff", []string{"internal/", "client", "broker", "searcher", "indexer"}, nil},
	{"internal/admission", []string{"internal/", "client", "broker", "searcher", "indexer"}, nil},
	{"internal/service", []string{"internal/", "client", "broker", "searcher", "indexer"}, nil},
	{"internal/meta", []string{"internal/shard", "client", "broker", "searcher", "indexer"}, nil},
	{"internal/shard", []string{"client", "broker", "searcher", "indexer"}, nil},
	// A query's term statistics, read through any index reader: the
	// broker's term listing and the shards' statistics phase. Of Quarry,
	// wire types only (TestBrokerLinksNoIndex).
	{"internal/querystats", []string{"internal/", "client", "broker", "searcher", "indexer"}, []string{"internal/wire"}},
	{"internal/snapshot", []string{"internal/", "client", "broker", "searcher", "indexer"}, nil},
	{"internal/catalog", []string{"internal/", "client", "broker", "searcher", "indexer"}, nil},
	// A role's micro service for discovery: subjects and NATS only.
	{"internal/rolestatus", []string{"internal/", "client", "broker", "searcher", "indexer"}, []string{"internal/subject"}},
	// The broker's own packages beneath it (broker/internal/...: the
	// fan-out) serve the broker's run: they import neither the broker nor
	// another service nor the top layer.
	{"broker/internal", []string{"broker", "searcher", "indexer", "registry", "client", "httpapi", "node", "cmd/"}, nil},
	// Services do not import each other or the client. The broker does
	// not import the shard replica either (TestBrokerLinksNoIndex).
	{"broker", []string{"searcher", "indexer", "client", "node", "httpapi", "cmd/", "internal/shard"}, nil},
	{"searcher", []string{"broker", "indexer", "client", "node", "httpapi", "cmd/"}, nil},
	{"indexer", []string{"broker", "searcher", "client", "node", "httpapi", "cmd/"}, nil},
	// The client speaks the public API only: the shard protocol
	// (internal/wire) stays between Quarry's roles, the admin service
	// answers for the shards (documents.count, documents.applied).
	{"client", []string{"broker", "searcher", "indexer", "node", "httpapi", "cmd/", "internal/wire", "internal/shard"}, nil},
	// The HTTP door reaches the services through the client (over NATS),
	// never by importing them.
	{"httpapi", []string{"broker", "searcher", "indexer", "registry", "node", "cmd/"}, nil},
	// The console is static files: it reaches Quarry only through the
	// HTTP API its pages call, never through Go imports.
	{"internal/console", []string{"internal/", "api", "client", "broker", "searcher", "indexer", "registry", "plugins", "planner", "cmd/"}, nil},
	// The plugin host knows wazero and the ABI, not NATS or the services.
	// (internal/trace is a leaf without NATS: spans; internal/requestid
	// a leaf of the standard library alone: request ids.)
	{"plugins", []string{"internal/", "client", "broker", "searcher", "indexer", "httpapi", "node", "cmd/", "planner"}, []string{"internal/trace", "internal/requestid"}},
	{"internal/trace", []string{"internal/", "client", "broker", "searcher", "indexer", "cmd/", "plugins", "planner"}, []string{"internal/requestid"}},
	{"internal/requestid", []string{"internal/", "api", "client", "broker", "searcher", "indexer", "cmd/", "plugins", "planner"}, nil},
	// The registry (admin service) does not reach into other services.
	{"registry", []string{"broker", "searcher", "indexer", "client", "node", "httpapi", "cmd/"}, nil},
	// The planner is pure: wire types only.
	{"planner", []string{"internal/", "client", "broker", "searcher", "indexer", "httpapi", "node", "cmd/"}, nil},
}

// pureForbidden are outside imports the planner must not have: no NATS, no
// index I/O (bleve's query types are fine), no WebAssembly runtime.
var pureForbidden = []string{"github.com/nats-io/", "github.com/tetratelabs/wazero", "github.com/blevesearch/bleve/v2/index"}

// TestTraceKnowsNoNATS: the plugin host may use internal/trace because
// it does not bring NATS with it (internal/tracenats does that).
func TestTraceKnowsNoNATS(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", mod+"/internal/trace").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/nats-io/") || strings.HasPrefix(dep, "github.com/tetratelabs/wazero") {
			t.Errorf("internal/trace depends on %s", dep)
		}
	}
}

func TestPlannerIsPure(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", mod+"/planner").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range pureForbidden {
			if strings.HasPrefix(dep, bad) || dep == "github.com/blevesearch/bleve/v2" {
				t.Errorf("planner depends on %s: it must stay pure (README.md, Layout)", dep)
			}
		}
	}
}

// indexForbidden are what the broker, and internal/querystats (which
// lists a query's terms for it), must not link: an index engine (bleve's
// index implementations, scorch and upsidedown with its stores; zap's
// segment formats) or the shard replica that opens one; nor the bleve
// package itself, which registers the engines (checked apart: its
// subpackages are the query API). Issue 37: the broker linked scorch to
// list a query's terms. bbolt is not on the list: bleve's util package,
// which its mapping, search and query packages import, wraps it for
// upsidedown's store, so the broker links the package and never opens a
// file with it.
var indexForbidden = []string{"github.com/blevesearch/bleve/v2/index", "github.com/blevesearch/zapx/", mod + "/internal/shard"}

// TestBrokerLinksNoIndex: the broker, which never opens an index, links
// no index engine.
func TestBrokerLinksNoIndex(t *testing.T) {
	for _, pkg := range []string{"broker", "internal/querystats"} {
		for _, dep := range deps(t, pkg) {
			if slices.ContainsFunc(indexForbidden, func(bad string) bool { return matches(dep, bad) }) || dep == "github.com/blevesearch/bleve/v2" {
				t.Errorf("%s depends on %s: it must link no index engine (issue 37)", pkg, dep)
			}
		}
	}
}

func TestImportsFlowDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, mod+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], mod), "/")
		for _, rule := range forbidden {
			if pkg != rule.from && !strings.HasPrefix(pkg, rule.from+"/") {
				continue
			}
			checked++
			for _, imp := range fields[1:] {
				rel, ok := strings.CutPrefix(imp, mod+"/")
				if !ok {
					continue
				}
				if rel == rule.from || strings.HasPrefix(rel, rule.from+"/") {
					continue // within its own tree
				}
				for _, bad := range rule.not {
					if matches(rel, bad) && !slices.Contains(rule.but, rel) {
						t.Errorf("%s imports %s: imports must flow down (see README.md, Layout; docs/RATIONALE.md, Layers)", pkg, rel)
					}
				}
			}
		}
	}
	if checked < 8 {
		t.Fatalf("only %d packages checked: the rules no longer match the tree", checked)
	}
}

// matches reports whether package rel is bad: "x/" means anything under x,
// "x" means x and its subpackages.
func matches(rel, bad string) bool {
	if strings.HasSuffix(bad, "/") {
		return strings.HasPrefix(rel, bad)
	}
	return rel == bad || strings.HasPrefix(rel, bad+"/")
}

// TestInternalTestsStayDown: the tests of packages under internal/ do not
// import the roof either, but for the known ones in testRoofImports.
// Test imports are listed with -tags long: the long tier's files are a
// superset of the fast tier's, so both tiers see the same list.
func TestInternalTestsStayDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "long", "-f", `{{.ImportPath}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}`, mod+"/internal/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	seen := map[[2]string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod+"/")
		for _, imp := range fields[1:] {
			rel, ok := strings.CutPrefix(imp, mod+"/")
			if !ok {
				continue
			}
			for _, bad := range roof {
				if !matches(rel, bad) {
					continue
				}
				key := [2]string{pkg, rel}
				if _, known := testRoofImports[key]; known {
					seen[key] = true
					continue
				}
				t.Errorf("%s's tests import %s: internal/ is the ground under the services (see docs/RATIONALE.md, Layers)", pkg, rel)
			}
		}
	}
	for key := range testRoofImports {
		if !seen[key] {
			t.Errorf("%s's tests no longer import %s: take it out of testRoofImports", key[0], key[1])
		}
	}
}

// TestExamplesStayOut: no package of the main module, nor its tests,
// depends on the examples module, so quarry does not link the example
// plugins and go.mod does not require them; only quarry-bench, a module
// of its own (cmd/quarry-bench), runs them natively. go.work would hide a
// missing require, so this looks at the packages themselves.
func TestExamplesStayOut(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{if eq .Module.Path "`+mod+`"}}{{.ImportPath}}{{end}}`, mod+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 20 {
		t.Fatalf("only %d packages in the main module: %v", len(pkgs), pkgs)
	}
	out, err = exec.Command("go", append([]string{"list", "-deps", "-test", "-f", "{{.ImportPath}}"}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, mod+"/examples/") || strings.HasPrefix(dep, mod+"/cmd/quarry-bench") {
			t.Errorf("the main module depends on %s: only cmd/quarry-bench (its own module) may", dep)
		}
	}
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(gomod), mod+"/examples") {
		t.Error("go.mod requires or replaces the examples module")
	}
}

// clientForbidden are what the public client (and the api it speaks)
// must not link: the server's parts (bleve, wazero, nats-server) and a
// tracer (OpenTelemetry, and the OTLP exporter's grpc and protobuf): the
// client carries a request id itself and a trace context through
// client.Options.Propagate.
var clientForbidden = []string{"github.com/blevesearch/", "github.com/tetratelabs/wazero", "github.com/nats-io/nats-server", "google.golang.org/grpc",
	"google.golang.org/protobuf", "go.opentelemetry.io/", mod + "/internal/trace"}

// maxClientDeps bounds the packages outside the standard library a
// program that imports the client links (issue 37: under 40; nats.go
// with its compression and nkeys' crypto are 27 of them).
const maxClientDeps = 40

// TestClientIsSmall: a program that imports the client gets no server,
// no index engine and no tracer with it, and few packages at all.
func TestClientIsSmall(t *testing.T) {
	for _, pkg := range []string{"client", "api"} {
		all := deps(t, pkg)
		for _, dep := range all {
			for _, bad := range clientForbidden {
				if strings.HasPrefix(dep, bad) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
		if n := nonStandard(t, pkg); n >= maxClientDeps {
			t.Errorf("%s links %d packages outside the standard library, want under %d", pkg, n, maxClientDeps)
		}
	}
}

// deps lists what the module's package pkg links ("go list -deps").
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	return goList(t, "-deps", mod+"/"+pkg)
}

// nonStandard counts the packages outside the standard library that the
// module's package pkg links (itself included), and logs it.
func nonStandard(t *testing.T, pkg string) int {
	t.Helper()
	n := len(goList(t, "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", mod+"/"+pkg))
	t.Logf("%s: %d packages outside the standard library", pkg, n)
	return n
}

// goList runs go list with args and returns the words it printed.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}
