package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/quarrysearch/quarry/client"
)

// reindexCmd is quarry index reindex SRC DST.
func reindexCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("reindex SRC DST", "build DST from SRC's documents in the stream, then switch an alias", "Builds the index DST from SRC's documents as the stream holds them (no document is\n"+
		"sent again), then goes on copying new writes to SRC until an alias of SRC is switched\n"+
		"to DST: with --alias, by this command, once DST has every document, is searchable and\n"+
		"refused none; without, by `quarry alias switch NAME DST` (this command waits for it).\n"+
		"DST is created with SRC's definition (--shards and --mapping change it) unless it exists,\n"+
		"and gets SRC's live pipeline (each plugin's live version, validated on DST).\n"+
		"Stopped (Ctrl-C, a crash), the same command goes on from where it was.", 2, 2)
	fs := cmd.Flags()
	shards := fs.Int("shards", 0, "DST's shards (default: SRC's)")
	mappingFile := fs.String("mapping", "", "DST's bleve mapping JSON file (default: SRC's)")
	alias := fs.String("alias", "", "the alias of SRC to switch to DST once DST has caught up")
	noPipeline := fs.Bool("no-pipeline", false, "leave DST's pipeline as it is (default: DST gets SRC's live plugins, validated on DST, before the copy)")
	grace := fs.Duration("grace", 5*time.Second, "how long to go on copying writes that reach SRC after the switch (a writer that had not heard of it)")
	every := fs.Duration("progress-every", time.Second, "how often to print progress")
	jsonOut := fs.Bool("json", false, "print the result as JSON")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		opts := client.ReindexOptions{Shards: *shards, Alias: *alias, Grace: *grace, NoPipeline: *noPipeline}
		var err error
		if *mappingFile != "" {
			if opts.Mapping, err = os.ReadFile(*mappingFile); err != nil {
				return fmt.Errorf("--mapping: %w", err)
			}
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		var last time.Time
		waiting := false
		opts.OnProgress = func(p client.ReindexProgress) {
			if *jsonOut || time.Since(last) < *every {
				return
			}
			last = time.Now()
			state := fmt.Sprintf("%d pending", p.Pending)
			switch {
			case p.Switched:
				state = "switched; copying late writes to " + pos[0]
			case p.CaughtUp && *alias == "":
				state = fmt.Sprintf("caught up; copying new writes to %s until an alias of it is switched to %s (quarry alias switch NAME %s), or Ctrl-C", pos[0], pos[1], pos[1])
				if waiting {
					return
				}
				waiting = true
			}
			fmt.Fprintf(e.stderr, "reindex %s → %s: %d copied, %d deleted; %s\n", pos[0], pos[1], p.Copied, p.Deleted, state)
		}
		res, err := c.Reindex(ctx, pos[0], pos[1], opts)
		if res != nil {
			if *jsonOut {
				printJSON(e.stdout, res)
			} else {
				for _, d := range res.Refused {
					fmt.Fprintf(e.stdout, "refused: %s (seq %d): %s\n", d.ID, d.Seq, d.Reason)
				}
				fmt.Fprintf(e.stdout, "%s → %s: %d documents copied, %d deletions, %d late writes older than %s's, in %s (%.0f docs/s)",
					pos[0], pos[1], res.Copied, res.Deleted, res.Skipped, pos[1], res.Took.Round(time.Millisecond), float64(res.Copied)/max(res.Took.Seconds(), 1e-3))
				if res.Switched {
					fmt.Fprintf(e.stdout, "; switched")
					if *alias != "" {
						fmt.Fprintf(e.stdout, " alias %s → index %s", *alias, pos[1])
					}
				}
				fmt.Fprintln(e.stdout)
			}
		}
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("stopped: run the same command to go on from where it was")
		}
		return err
	}
	return cmd
}
