package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/quarrysearch/quarry/client"
)

func aliasCmd(e *env, nf *natsFlags) *cobra.Command {
	return newGroup("alias", "create, switch, list or remove index aliases",
		"Names that point at an index: searches, reads and writes of an alias are its\n"+
			"index's, and switching it to another index (after a reindex) is atomic.",
		aliasSetCmd(e, nf, "create"), aliasSetCmd(e, nf, "switch"), aliasLsCmd(e, nf), aliasRmCmd(e, nf))
}

// aliasSetCmd is alias create and alias switch (op).
func aliasSetCmd(e *env, nf *natsFlags, op string) *cobra.Command {
	about := map[string][2]string{
		"create": {"make NAME point at INDEX: searches, reads and writes of NAME are INDEX's",
			"Makes the alias NAME point at INDEX: every command that takes an index takes\n" +
				"NAME too (search, put, get, ingest, patch, delete-by-query), and acts on INDEX."},
		"switch": {"point NAME at another index of its team, at once (reindex, then switch)",
			"Points the alias NAME at INDEX instead, atomically: searches and writes through\n" +
				"NAME after it are INDEX's. INDEX must be of the alias's team."},
	}[op]
	cmd := newCommand(op+" NAME INDEX", about[0], about[1], 2, 2)
	cmd.RunE = clientRun(nf, func(ctx context.Context, c *client.Client, pos []string) error {
		set, done := c.CreateAlias, "created"
		if op == "switch" {
			set, done = c.SwitchAlias, "switched"
		}
		a, err := set(ctx, pos[0], pos[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s alias %s → index %s\n", done, a.Name, a.Index)
		return nil
	})
	return cmd
}

func aliasLsCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("ls", "list aliases and the index each points at", "Lists aliases: each one's index and team.", 0, 0)
	cmd.Aliases = []string{"list"}
	jsonOut := cmd.Flags().Bool("json", false, "print JSON")
	cmd.RunE = clientRun(nf, func(ctx context.Context, c *client.Client, _ []string) error {
		as, err := c.Aliases(ctx)
		if err != nil {
			return err
		}
		if *jsonOut {
			return printJSON(e.stdout, as)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ALIAS\tINDEX\tTEAM\tUPDATED")
		for _, a := range as {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Name, a.Index, a.Team, a.Updated.Local().Format(time.DateTime))
		}
		return tw.Flush()
	})
	return cmd
}

func aliasRmCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("rm NAME", "remove an alias (its index stays)", "Removes an alias; the index it points at stays.", 1, 1)
	cmd.Aliases = []string{"delete"}
	cmd.RunE = clientRun(nf, func(ctx context.Context, c *client.Client, pos []string) error {
		if err := c.DeleteAlias(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "removed alias %s\n", pos[0])
		return nil
	})
	return cmd
}
