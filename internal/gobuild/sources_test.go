package gobuild

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Sources lists a plugin's own file, the SDK's it imports and the
// modules' go.mod files, and no file of the standard library.
func TestSources(t *testing.T) {
	files, err := Sources(context.Background(), "../../examples/plugins/spelling")
	if err != nil {
		t.Fatal(err)
	}
	has := func(suffix string) bool {
		return slices.ContainsFunc(files, func(f string) bool { return strings.HasSuffix(filepath.ToSlash(f), suffix) })
	}
	for _, want := range []string{"examples/plugins/spelling/main.go", "examples/plugins/lib/spelling/spelling.go", "sdk/sdk.go", "sdk/context.go", "sdk/abi/codec.go", "examples/plugins/go.mod", "sdk/go.mod"} {
		if !has(want) {
			t.Errorf("no %s in %v", want, files)
		}
	}
	if has("/strings/builder.go") {
		t.Errorf("the standard library's files listed: %v", files)
	}
	if has("sdk/host_other.go") {
		t.Errorf("a file another platform builds listed: %v", files)
	}
}
