package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"
	"time"
)

func runIndex(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(os.Stderr, "Usage: quarry index create|ls|show|rm ...\n\n"+
			"  create NAME --shards N [--mapping FILE]   create an index (bleve mapping JSON; default mapping otherwise)\n"+
			"  ls                                        list indexes\n"+
			"  show NAME                                 an index's definition and current snapshot\n"+
			"  rm NAME                                   delete an index, its documents and snapshots\n")
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	sub, args := args[0], args[1:]
	var nf natsFlags
	jsonOut := false
	switch sub {
	case "create":
		fs := newFlags("index create", "NAME", "Creates an index. Its definition lives in the quarry-indexes KV bucket.")
		nf.register(fs)
		shards := fs.Int("shards", 1, "number of shards (1-256)")
		mappingFile := fs.String("mapping", "", "bleve index mapping JSON file (default: dynamic mapping, BM25)")
		pos, err := parse(fs, args, 1, 1)
		if err != nil {
			return err
		}
		var mapping json.RawMessage
		if *mappingFile != "" {
			if mapping, err = os.ReadFile(*mappingFile); err != nil {
				return fmt.Errorf("--mapping: %w", err)
			}
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		def, err := c.CreateIndex(ctx, pos[0], *shards, mapping)
		if err != nil {
			return err
		}
		fmt.Printf("created index %s with %d shards\n", def.Name, def.Shards)
		return nil
	case "ls", "list":
		fs := newFlags("index ls", "", "Lists indexes with their shard count and current snapshot.")
		nf.register(fs)
		fs.BoolVar(&jsonOut, "json", false, "print JSON")
		if _, err := parse(fs, args, 0, 0); err != nil {
			return err
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		defs, err := c.Indexes(ctx)
		if err != nil {
			return err
		}
		var rows []any
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		if !jsonOut {
			fmt.Fprintln(tw, "NAME\tSHARDS\tGENERATION\tDOCS\tSNAPSHOT\tCREATED")
		}
		for _, d := range defs {
			st, err := c.Status(ctx, d.Name)
			if err != nil {
				return err
			}
			rows = append(rows, st)
			if !jsonOut {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", d.Name, d.Shards, st.Generation, st.Docs, humanBytes(st.Bytes), d.Created.Local().Format(time.DateTime))
			}
		}
		if jsonOut {
			return printJSON(rows)
		}
		return tw.Flush()
	case "show":
		fs := newFlags("index show", "NAME", "Prints an index's definition (with its mapping) and snapshot as JSON.")
		nf.register(fs)
		pos, err := parse(fs, args, 1, 1)
		if err != nil {
			return err
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		st, err := c.Status(ctx, pos[0])
		if err != nil {
			return err
		}
		return printJSON(st)
	case "rm", "delete":
		fs := newFlags("index rm", "NAME", "Deletes an index: its definition, documents and snapshots.")
		nf.register(fs)
		pos, err := parse(fs, args, 1, 1)
		if err != nil {
			return err
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		if err := c.DeleteIndex(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Printf("deleted index %s\n", pos[0])
		return nil
	}
	fmt.Fprintf(os.Stderr, "quarry index: unknown subcommand %q (want create, ls, show or rm)\n", sub)
	return errUsage
}

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
