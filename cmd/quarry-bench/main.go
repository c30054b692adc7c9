// Command quarry-bench measures Quarry side by side with bleve on the same
// documents and cores, and the demo plugin pipeline in WebAssembly against
// the same Go code run natively (open, closed and mixed read/write loops, a
// JSON report, an SVG plot). `quarry bench` runs it.
//
//	quarry-bench --duration 10s --out report.json
//	quarry-bench plot report.json > latency.svg
//
// It is a module of its own so that quarry, the platform's binary, does
// not link the example plugins this benchmark runs natively.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/cmdline"
)

// version is the Quarry release this benchmark measures (its reports
// record it).
const version = api.Version

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := runBench(ctx, os.Args[1:])
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, cmdline.ErrUsage):
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "quarry bench: %v\n", err)
		if api.CodeOf(err) == api.CodeBadRequest {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
