package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
)

// initCmd decides a deployment's replication: it creates Quarry's
// JetStream resources at --replicas, or changes those that exist to it.
func initCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("init", "decide a NATS deployment's replication: create Quarry's streams and buckets at --replicas", "Creates Quarry's JetStream streams and buckets on a NATS deployment with --replicas\n"+
		"replicas each, or changes the replication of those that exist to it, and\n"+
		"prints each stream's replicas. Replication is decided once for a deployment:\n"+
		"roles and CLI commands started without --replicas adopt it, and one started\n"+
		"with another count is refused with a message naming both (docs/deploy.md).", 0, 0)
	replicas := cmd.Flags().Int("replicas", 0, "JetStream replicas of every Quarry stream and bucket, 1 to 5 (3 on a three-member cluster); required")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		if err := api.CheckReplicas(*replicas); err != nil {
			return fmt.Errorf("--%w", err)
		}
		opts, err := nf.options()
		if err != nil {
			return err
		}
		nc, err := nats.Connect(nf.url, append(opts, nats.Name("quarry-init"))...)
		if err != nil {
			return fmt.Errorf("connect to NATS at %s: %w", nf.url, err)
		}
		defer nc.Close()
		ctx, cancel := context.WithTimeout(ctx, nf.timeout)
		defer cancel()
		got, err := client.Init(ctx, nc, *replicas)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "STREAM\tREPLICAS")
		for _, name := range slices.Sorted(maps.Keys(got)) {
			fmt.Fprintf(w, "%s\t%d\n", name, got[name])
		}
		return w.Flush()
	}
	return cmd
}
