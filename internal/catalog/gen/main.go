// Command gen writes the Quarry demo food-delivery catalogue as NDJSON.
//
// The bundled demo file is produced with the defaults:
//
//	go run ./internal/catalog/gen -o examples/catalog/menu.ndjson -mapping examples/catalog/mapping.json
//
// Flags:
//
//	-seed     generator seed (default catalog.DefaultSeed)
//	-n        number of menu items (default catalog.DefaultSize)
//	-o        output file, "-" for standard output (default "-")
//	-mapping  if set, also write the bleve index mapping JSON to this file
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/quarrysearch/quarry/internal/catalog"
)

func main() {
	seed := flag.Uint64("seed", catalog.DefaultSeed, "generator seed")
	n := flag.Int("n", catalog.DefaultSize, "number of menu items")
	out := flag.String("o", "-", `output file, "-" for standard output`)
	mappingOut := flag.String("mapping", "", "if set, also write the bleve index mapping JSON to this file")
	flag.Parse()
	if flag.NArg() != 0 || *n < 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*seed, *n, *out, *mappingOut); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(seed uint64, n int, out, mappingOut string) error {
	items := catalog.Generate(seed, n)
	if out == "-" {
		w := bufio.NewWriter(os.Stdout)
		if err := catalog.WriteNDJSON(w, items); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	} else if err := writeFile(out, func(w io.Writer) error { return catalog.WriteNDJSON(w, items) }); err != nil {
		return err
	}
	if mappingOut != "" {
		return writeFile(mappingOut, func(w io.Writer) error {
			_, err := w.Write(catalog.Mapping())
			return err
		})
	}
	return nil
}

// writeFile writes a file through a temporary file in the same directory,
// so that an interrupted run never leaves a truncated file behind.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".gen-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
