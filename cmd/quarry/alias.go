package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/quarrysearch/quarry/internal/cmdline"
)

func runAlias(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(e.stderr, "Usage: quarry alias create|switch|ls|rm ...\n\n"+
			"  create NAME INDEX     make NAME point at INDEX: searches, reads and writes of NAME are INDEX's\n"+
			"  switch NAME INDEX     point NAME at another index of its team, at once (reindex, then switch)\n"+
			"  ls                    list aliases and the index each points at\n"+
			"  rm NAME               remove an alias (its index stays)\n")
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	sub, args := args[0], args[1:]
	var nf natsFlags
	switch sub {
	case "create", "switch":
		what := map[string]string{
			"create": "Makes the alias NAME point at INDEX: every command that takes an index takes\n" +
				"NAME too (search, put, get, ingest, patch, delete-by-query), and acts on INDEX.",
			"switch": "Points the alias NAME at INDEX instead, atomically: searches and writes through\n" +
				"NAME after it are INDEX's. INDEX must be of the alias's team.",
		}[sub]
		fs := e.newFlags("alias "+sub, "NAME INDEX", what)
		nf.register(fs, e.getenv)
		pos, err := cmdline.Parse(fs, args, 2, 2)
		if err != nil {
			return err
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		set, done := c.CreateAlias, "created"
		if sub == "switch" {
			set, done = c.SwitchAlias, "switched"
		}
		a, err := set(ctx, pos[0], pos[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s alias %s → index %s\n", done, a.Name, a.Index)
		return nil
	case "ls", "list":
		fs := e.newFlags("alias ls", "", "Lists aliases: each one's index and team.")
		nf.register(fs, e.getenv)
		jsonOut := fs.Bool("json", false, "print JSON")
		if _, err := cmdline.Parse(fs, args, 0, 0); err != nil {
			return err
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
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
	case "rm", "delete":
		fs := e.newFlags("alias rm", "NAME", "Removes an alias; the index it points at stays.")
		nf.register(fs, e.getenv)
		pos, err := cmdline.Parse(fs, args, 1, 1)
		if err != nil {
			return err
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		if err := c.DeleteAlias(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "removed alias %s\n", pos[0])
		return nil
	}
	fmt.Fprintf(e.stderr, "quarry alias: unknown subcommand %q (want create, switch, ls or rm)\n", sub)
	return errUsage
}
