package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
)

func ingestCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("ingest INDEX FILE.ndjson|-", "bulk-load NDJSON documents and publish a new generation", "Bulk-loads newline-delimited JSON documents (each an object with a string\n\"id\"), then asks the indexer for a new snapshot generation. Bad lines are\nreported by number and skipped; good lines still go in.\n\n"+
		"Progress counts documents indexed (searchable, as the searchers report),\n"+
		"not lines read: storing runs far ahead of indexing. On a terminal it is a\n"+
		"bar; otherwise a line every --progress-every.", 2, 2)
	fs := cmd.Flags()
	noSnap := fs.Bool("no-snapshot", false, "do not publish a new generation at the end")
	format := fs.String("format", client.FormatNDJSON, "the input's format: ndjson (a document a line; a JSON array of documents is read as such) or es (Elasticsearch's bulk action lines: index, create, delete)")
	wait := fs.Bool("wait", false, "return only once a search finds every document stored (the searchers have applied them)")
	jsonOut := fs.Bool("json", false, "print the result as JSON")
	quiet := fs.Bool("quiet", false, "no progress bar")
	every := fs.Duration("progress-every", 3*time.Second, "how often a progress line is printed when stderr is not a terminal (a terminal gets a bar)")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		var in io.Reader = e.stdin
		var total int64
		if pos[1] != "-" {
			f, err := os.Open(pos[1])
			if err != nil {
				return err
			}
			defer f.Close()
			if st, err := f.Stat(); err == nil {
				total = st.Size()
			}
			in = f
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		if *every <= 0 {
			return api.BadRequest("--progress-every must be positive, got %s", *every)
		}
		bar := newProgress(e.stderr, total, *quiet || *jsonOut, *every)
		opts := client.BulkOptions{NoSnapshot: *noSnap, WaitSearchable: *wait, Format: *format}
		if !*quiet && !*jsonOut {
			opts.OnProgress = bar.update
		}
		start := time.Now()
		res, err := c.Bulk(ctx, pos[0], in, opts)
		bar.done()
		if res != nil {
			if *jsonOut {
				printJSON(e.stdout, res)
			} else {
				took := time.Since(start)
				fmt.Fprintf(e.stdout, "%d lines: %d stored, %d refused in %s (%.0f docs/s)\n", res.Lines, res.Stored, res.Failed,
					took.Round(time.Millisecond), float64(res.Stored)/took.Seconds())
				for _, le := range res.Errors {
					fmt.Fprintf(e.stdout, "  %s\n", le)
				}
				if res.Failed > len(res.Errors) {
					fmt.Fprintf(e.stdout, "  … and %d more\n", res.Failed-len(res.Errors))
				}
				if res.Searchable {
					fmt.Fprintf(e.stdout, "searchable: a search finds all %d\n", res.Stored)
				}
				if res.Snapshot != nil {
					fmt.Fprintf(e.stdout, "published generation %d: %d docs, %s\n", res.Snapshot.Generation, res.Snapshot.Docs, humanBytes(res.Snapshot.Bytes))
				}
			}
		}
		if err != nil {
			return err
		}
		if res.Failed > 0 {
			return fmt.Errorf("%d of %d lines refused", res.Failed, res.Lines)
		}
		return nil
	}
	return cmd
}

func putCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("put INDEX FILE.json|-", "upsert one JSON document", "Upserts one JSON document (an object with a string \"id\"). It is\nacknowledged once stored in the stream and searchable within milliseconds.", 2, 2)
	wait := cmd.Flags().Bool("wait", false, "return only once a search finds the document (its searcher has applied it)")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		doc, err := readArg(e, pos[1])
		if err != nil {
			return err
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		seq, err := c.Put(ctx, pos[0], doc)
		if err != nil {
			return err
		}
		return e.stored(ctx, c, pos[0], seq, *wait)
	}
	return cmd
}

// stored says at which stream sequence a write of index was stored and,
// with wait, waits until a search finds it.
func (e *env) stored(ctx context.Context, c *client.Client, index string, seq uint64, wait bool) error {
	fmt.Fprintf(e.stdout, "stored at sequence %d\n", seq)
	if !wait {
		return nil
	}
	if err := c.WaitSearchable(ctx, index, seq); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "searchable\n")
	return nil
}

func patchCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("patch INDEX ID PATCH.json|-", "change part of one document (a JSON merge patch), atomically", `Changes part of one document with a JSON merge patch (RFC 7386): an
object whose members replace the document's, objects merged member by
member, null removing a member; e.g. {"price": 9.5, "tags": null}. The
read and the write are one atomic step: a patch never loses a write
made at the same time. With --if-seq, only the version stored at that
stream sequence is patched (what get --json shows as "seq").`, 3, 3)
	fs := cmd.Flags()
	ifSeq := fs.Uint64("if-seq", 0, "patch only the version stored at this stream sequence (0: the latest)")
	wait := fs.Bool("wait", false, "return only once a search finds the new version (its searcher has applied it)")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		patch, err := readArg(e, pos[2])
		if err != nil {
			return err
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		seq, err := c.Patch(ctx, pos[0], pos[1], patch, client.PatchOptions{IfSeq: *ifSeq})
		if err != nil {
			return err
		}
		return e.stored(ctx, c, pos[0], seq, *wait)
	}
	return cmd
}

// readArg reads a command's input: the file named, or standard input
// for "-".
func readArg(e *env, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(e.stdin)
	}
	return os.ReadFile(name)
}

func deleteByQueryCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("delete-by-query INDEX [TEXT]", "delete every document a query finds", `Deletes every document a search finds: TEXT, --query or --filter, run
as it is (no rewriter or ranker of the index's), in rounds of 1,000
until a search finds none, or --max. --dry-run only counts them.`, 1, 2)
	fs := cmd.Flags()
	queryJSON := fs.String("query", "", "bleve query in JSON, instead of TEXT")
	filterJSON := fs.String("filter", "", "bleve query in JSON every deleted document must match")
	maxDocs := fs.Int("max", client.DefaultDeleteMax, fmt.Sprintf("delete at most this many (at most %d)", client.MaxDeleteMax))
	dryRun := fs.Bool("dry-run", false, "count the documents it would delete, delete none")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		q := client.DeleteQuery{Max: *maxDocs}
		if len(pos) == 2 {
			q.Q = pos[1]
		}
		for _, j := range []struct {
			flag, val string
			to        *json.RawMessage
		}{{"--query", *queryJSON, &q.Query}, {"--filter", *filterJSON, &q.Filter}} {
			if j.val == "" {
				continue
			}
			if !json.Valid([]byte(j.val)) {
				return api.BadRequest("%s is not valid JSON", j.flag)
			}
			*j.to = json.RawMessage(j.val)
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		if *dryRun {
			n, err := c.CountByQuery(ctx, pos[0], q)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%d documents match; none deleted (--dry-run)\n", n)
			return nil
		}
		res, err := c.DeleteByQuery(ctx, pos[0], q)
		fmt.Fprintf(e.stdout, "deleted %d documents", res.Deleted)
		if res.LastSeq > 0 {
			fmt.Fprintf(e.stdout, " (last at sequence %d)", res.LastSeq)
		}
		if res.More {
			fmt.Fprintf(e.stdout, "; more match: stopped at --max %d", q.Max)
		}
		fmt.Fprintln(e.stdout)
		return err
	}
	return cmd
}

func deleteCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("delete INDEX ID", "delete one document by id", "Deletes one document by id.", 2, 2)
	cmd.RunE = clientRun(nf, func(ctx context.Context, c *client.Client, pos []string) error {
		seq, err := c.Delete(ctx, pos[0], pos[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "deleted at sequence %d\n", seq)
		return nil
	})
	return cmd
}
