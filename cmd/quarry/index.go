package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
)

func indexCmd(e *env, nf *natsFlags) *cobra.Command {
	return newGroup("index", "create, list, show or remove indexes",
		"Creates, lists, shows and removes indexes; shows or changes an index's query\n"+
			"settings and mapping; lists the documents its indexer could not apply; builds\n"+
			"one index from another's documents (reindex).",
		indexCreateCmd(e, nf), indexLsCmd(e, nf), indexShowCmd(e, nf), indexQueryCmd(e, nf),
		indexMappingCmd(e, nf), indexRejectedCmd(e, nf), reindexCmd(e, nf), indexRmCmd(e, nf))
}

func indexCreateCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("create NAME", "create an index (1 shard unless --shards; bleve mapping JSON; query settings JSON)",
		"Creates an index. Its definition lives in the quarry-indexes KV bucket.", 1, 1)
	fs := cmd.Flags()
	shards := fs.Int("shards", defaultShards, "number of shards (1-256)")
	team := fs.String("team", "", "team that owns the index: its plugins share that team's plugin runtime and limits (default: the index is a team of its own)")
	mappingFile := fs.String("mapping", "", "bleve index mapping JSON file (default: dynamic mapping, BM25)")
	queryFile := fs.String("query", "", `query settings JSON file, e.g. {"fields":[{"field":"name","boost":3}],"operator":"or"}`)
	var docs api.DocumentLimits
	dd, dm := &api.DefaultDocumentLimits, &api.MaxDocumentLimits
	fs.IntVar(&docs.MaxFields, "max-doc-fields", 0, fmt.Sprintf("most distinct field paths in one document (documents.max_fields; 0: the default, %d; at most %d)", dd.MaxFields, dm.MaxFields))
	fs.IntVar(&docs.MaxDepth, "max-doc-depth", 0, fmt.Sprintf("deepest nesting of objects and arrays in a document, the document itself 1 (documents.max_depth; 0: the default, %d; at most %d)", dd.MaxDepth, dm.MaxDepth))
	fs.IntVar(&docs.MaxIndexFields, "max-index-fields", 0, fmt.Sprintf("most distinct field paths of the index, over every document sent to it (documents.max_index_fields; 0: the default, %d; at most %d)", dd.MaxIndexFields, dm.MaxIndexFields))
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		var mapping json.RawMessage
		var err error
		if *mappingFile != "" {
			if mapping, err = os.ReadFile(*mappingFile); err != nil {
				return fmt.Errorf("--mapping: %w", err)
			}
		}
		var qs api.QuerySettings
		if *queryFile != "" {
			if qs, err = readQuerySettings(e.stdin, *queryFile); err != nil {
				return fmt.Errorf("--query: %w", err)
			}
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		def, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: pos[0], Shards: *shards, Team: *team, Mapping: mapping, Query: qs, Documents: docs})
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, createdLine(def.Name, def.Shards, fs.Changed("shards")))
		return nil
	}
	return cmd
}

func indexLsCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("ls", "list indexes, with live document counts", "Lists indexes with their shard count, live document count (what searches\n"+
		"see now, from the searchers) and current snapshot.", 0, 0)
	cmd.Aliases = []string{"list"}
	jsonOut := cmd.Flags().Bool("json", false, "print JSON")
	cmd.RunE = clientRun(nf, func(ctx context.Context, c *client.Client, _ []string) error {
		defs, err := c.Indexes(ctx)
		if err != nil {
			return err
		}
		var rows []any
		var notes []string // why a count is the snapshot's
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		if !*jsonOut {
			fmt.Fprintln(tw, "NAME\tTEAM\tSHARDS\tGENERATION\tDOCS\tSNAPSHOT\tCREATED")
		}
		for _, d := range defs {
			st, err := c.Status(ctx, d.Name)
			if err != nil {
				return err
			}
			rows = append(rows, st)
			docs := strconv.FormatUint(st.Docs, 10)
			if st.DocsFrom == client.DocsFromSnapshot {
				docs += "*"
				notes = append(notes, fmt.Sprintf("%s: %s", d.Name, st.DocsNote))
			}
			if !*jsonOut {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", d.Name, d.TeamOf(), d.Shards, st.Generation, docs, humanBytes(st.Bytes), d.Created.Local().Format(time.DateTime))
			}
		}
		if *jsonOut {
			return printJSON(e.stdout, rows)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(notes) > 0 {
			fmt.Fprintf(e.stdout, "\n* the last snapshot's count, which may trail writes since (no live count: %s)\n", strings.Join(notes, "; "))
		}
		return nil
	})
	return cmd
}

func indexQueryCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("query NAME [FILE|-]", "show, or replace, how the index turns text into a query", "Prints an index's query settings, or replaces them from FILE (JSON):\n"+
		`  {"fields":[{"field":"name","boost":3},{"field":"_all"}],"operator":"or","fuzziness":0,"phrase_boost":2}`+"\n"+
		"Brokers use new settings at once, without a restart.", 1, 2)
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		return definitionPart(cmd.Context(), e, nf, pos, func(def api.IndexDefinition) any { return def.Query },
			func(ctx context.Context, c *client.Client, name, path string, raw []byte) (api.IndexDefinition, error) {
				qs, err := parseQuerySettings(path, raw)
				if err != nil {
					return api.IndexDefinition{}, err
				}
				return c.SetQuerySettings(ctx, name, qs)
			})
	}
	return cmd
}

func indexMappingCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("mapping NAME [FILE|-]", "show the index's mapping, or add fields to it in place", "Prints an index's mapping (bleve's JSON, as stored), or changes it in place to\n"+
		"the whole mapping in FILE (- reads standard input). In place, a mapping may only\n"+
		"add: fields no document of the index holds yet, type mappings and analysis\n"+
		"components. Documents written before the change keep how they were indexed;\n"+
		"every replica indexes those after it with the new mapping, and serves\n"+
		"searches throughout. Any other change takes a new index:\n"+
		"  quarry index reindex SRC DST --mapping FILE --alias NAME", 1, 2)
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		return definitionPart(cmd.Context(), e, nf, pos, func(def api.IndexDefinition) any { return def.Mapping },
			func(ctx context.Context, c *client.Client, name, _ string, raw []byte) (api.IndexDefinition, error) {
				return c.ChangeMapping(ctx, name, raw)
			})
	}
	return cmd
}

func indexShowCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("show NAME", "show an index's definition, live document count and snapshot",
		"Prints an index's definition (with its mapping), live document count and\ncurrent snapshot as JSON.", 1, 1)
	cmd.RunE = clientRun(nf, func(ctx context.Context, c *client.Client, pos []string) error {
		st, err := c.Status(ctx, pos[0])
		if err != nil {
			return err
		}
		return printJSON(e.stdout, st)
	})
	return cmd
}

func indexRejectedCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("rejected NAME", "list the documents the stream acknowledged that the indexer could not apply",
		"Lists the documents of an index that the stream acknowledged but the indexer\n"+
			"could not apply, and so skipped for good: over the index's documents.max_fields\n"+
			"or max_depth, malformed JSON, a document bleve refused, a bad subject. They\n"+
			"reached the stream past the client's checks (written to JetStream directly, or\n"+
			"stored before a limit existed). One line each, oldest first: its stream\n"+
			fmt.Sprintf("sequence, shard, id, when the stream stored it, and why. The last %d of an\n", api.MaxRejectedDocuments)+
			"index are kept; they go with the index. It asks the admin API, which brokers\n"+
			"serve (documents.rejected), so a team's NATS user may list its own indexes'.", 1, 1)
	fs := cmd.Flags()
	jsonOut := fs.Bool("json", false, "print JSON")
	limit := fs.Int("limit", 0, "show only the last N (0: every one kept)")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		if *limit < 0 {
			return api.BadRequest("--limit must be 0 (every one kept) or more, got %d", *limit)
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		docs, err := c.RejectedDocuments(ctx, pos[0], *limit)
		if err != nil {
			return err
		}
		return printRejected(e.stdout, docs, *jsonOut)
	}
	return cmd
}

func indexRmCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("rm NAME", "delete an index, its documents and snapshots", "Deletes an index: its definition, documents and snapshots.", 1, 1)
	cmd.Aliases = []string{"delete"}
	cmd.RunE = clientRun(nf, func(ctx context.Context, c *client.Client, pos []string) error {
		if err := c.DeleteIndex(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "deleted index %s\n", pos[0])
		return nil
	})
	return cmd
}

// printRejected prints the records of rejected documents as a table, or
// JSON.
func printRejected(w io.Writer, docs []api.RejectedDocument, jsonOut bool) error {
	if jsonOut {
		if docs == nil {
			docs = []api.RejectedDocument{}
		}
		return printJSON(w, docs)
	}
	if len(docs) == 0 {
		_, err := fmt.Fprintln(w, "no rejected documents")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tSHARD\tID\tTIME\tREASON")
	for _, d := range docs {
		id := d.ID
		if id == "" {
			id = "-"
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", d.Seq, d.Shard, cell(id), d.Time.Local().Format(time.DateTime), cell(d.Reason))
	}
	return tw.Flush()
}

// cell quotes s if it holds a tab, a line break or another control
// character, which would break a table's row.
func cell(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return strconv.Quote(s)
	}
	return s
}

// defaultShards is index create's shard count without --shards.
const defaultShards = 1

// createdLine says what index create made, and which shard count it took
// by default when --shards was not given.
func createdLine(name string, shards int, shardsGiven bool) string {
	line := fmt.Sprintf("created index %s with %d shard", name, shards)
	if shards != 1 {
		line += "s"
	}
	if !shardsGiven {
		line += " (the default; --shards N for more)"
	}
	return line
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
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

// readQuerySettings reads query settings JSON from a file or stdin ("-"),
// refusing unknown fields.
func readQuerySettings(stdin io.Reader, path string) (api.QuerySettings, error) {
	b, err := readFileOrStdin(stdin, path)
	if err != nil {
		return api.QuerySettings{}, err
	}
	return parseQuerySettings(path, b)
}

// parseQuerySettings decodes and checks query settings read from path.
func parseQuerySettings(path string, b []byte) (api.QuerySettings, error) {
	var qs api.QuerySettings
	if err := api.DecodeStrict("query settings "+path, b, &qs); err != nil {
		return qs, err
	}
	return qs, qs.Validate()
}

// definitionPart runs `index query` and `index mapping`: with NAME alone
// (pos) it prints a part of the index's definition; with FILE (- reads
// standard input) it changes that part with set and prints it as stored.
func definitionPart(ctx context.Context, e *env, nf *natsFlags, pos []string, part func(api.IndexDefinition) any,
	set func(ctx context.Context, c *client.Client, name, path string, raw []byte) (api.IndexDefinition, error)) error {
	nc, c, err := nf.connect(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	var def api.IndexDefinition
	if len(pos) == 1 {
		def, err = c.Index(ctx, pos[0])
	} else {
		var raw []byte
		if raw, err = readFileOrStdin(e.stdin, pos[1]); err == nil {
			def, err = set(ctx, c, pos[0], pos[1], raw)
		}
	}
	if err != nil {
		return err
	}
	return printJSON(e.stdout, part(def))
}

// readFileOrStdin reads the file at path, or stdin for "-".
func readFileOrStdin(stdin io.Reader, path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(path)
}
