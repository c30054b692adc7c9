package main

import "github.com/spf13/pflag"

// metricsFlags are --metrics and --pprof of a long-running command.
type metricsFlags struct {
	addr  *string
	pprof *bool
}

// addMetricsFlags adds --metrics and --pprof to a long-running command's
// flags.
func addMetricsFlags(fs *pflag.FlagSet) metricsFlags {
	return metricsFlags{
		addr:  fs.String("metrics", "", "serve GET /metrics (Prometheus) on this address, e.g. 127.0.0.1:9464 (the HTTP API serves /metrics too; docs/operations.md)"),
		pprof: fs.Bool("pprof", false, "also serve Go's profiles (net/http/pprof: heap, CPU, goroutines, mutexes) under /debug/pprof/ on the --metrics listener; off by default, as a profile shows what the process holds"),
	}
}
