package main

import "flag"

// metricsFlag adds --metrics to a long-running command's flags.
func metricsFlag(fs *flag.FlagSet) *string {
	return fs.String("metrics", "", "serve GET /metrics (Prometheus) on this address, e.g. 127.0.0.1:9464 (the HTTP API serves /metrics too; docs/operations.md)")
}
