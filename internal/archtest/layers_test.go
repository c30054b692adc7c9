package archtest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/quarrysearch/quarry"

// forbidden lists, per package prefix, module packages it must not import.
var forbidden = []struct {
	from string
	not  []string
	// but are exceptions to not.
	but []string
}{
	// Wire types import nothing else of Quarry but subject names.
	{"api", []string{"internal/", "client", "broker", "searcher", "indexer", "cmd/"}, nil},
	// Shared internals stay below the services.
	{"internal/subject", []string{"internal/", "client", "broker", "searcher", "indexer"}, nil},
	{"internal/wire", []string{"internal/meta", "internal/shard", "client", "broker", "searcher", "indexer"}, nil},
	{"internal/meta", []string{"internal/shard", "client", "broker", "searcher", "indexer"}, nil},
	{"internal/shard", []string{"client", "broker", "searcher", "indexer"}, nil},
	{"internal/snapshot", []string{"internal/", "client", "broker", "searcher", "indexer"}, nil},
	{"internal/catalog", []string{"internal/", "client", "broker", "searcher", "indexer"}, nil},
	// A role's micro service for discovery: subjects and NATS only.
	{"internal/rolestatus", []string{"internal/", "client", "broker", "searcher", "indexer"}, []string{"internal/subject"}},
	// Services do not import each other or the client.
	{"broker", []string{"searcher", "indexer", "client", "internal/node", "cmd/"}, nil},
	{"searcher", []string{"broker", "indexer", "client", "internal/node", "cmd/"}, nil},
	{"indexer", []string{"broker", "searcher", "client", "internal/node", "cmd/"}, nil},
	{"client", []string{"broker", "searcher", "indexer", "internal/node", "cmd/"}, nil},
	{"internal/httpapi", []string{"broker", "searcher", "indexer", "internal/node"}, nil},
	// The console is static files: it reaches Quarry only through the
	// HTTP API its pages call, never through Go imports.
	{"internal/console", []string{"internal/", "api", "client", "broker", "searcher", "indexer", "registry", "plugins", "planner", "cmd/"}, nil},
	// The plugin host knows wazero and the ABI, not NATS or the services.
	// (internal/trace is a leaf without NATS: request ids and spans.)
	{"plugins", []string{"internal/", "client", "broker", "searcher", "indexer", "cmd/", "planner"}, []string{"internal/trace"}},
	{"internal/trace", []string{"internal/", "client", "broker", "searcher", "indexer", "cmd/", "plugins", "planner"}, nil},
	// The registry (admin service) does not reach into other services.
	{"registry", []string{"broker", "searcher", "indexer", "client", "internal/node", "cmd/"}, nil},
	// The planner is pure: wire types only.
	{"planner", []string{"internal/", "client", "broker", "searcher", "indexer", "cmd/"}, nil},
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
				t.Errorf("planner depends on %s: it must stay pure (DESIGN.md)", dep)
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
						t.Errorf("%s imports %s: imports must flow down (see DESIGN.md, Layers)", pkg, rel)
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
