package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
)

func getCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("get INDEX ID", "print one document by id, as stored", "Prints one document, exactly as it was written (the latest version).\n"+
		"It is read from the JetStream stream, the source of truth, so it is\n"+
		"there as soon as a put is acknowledged, and no searcher needs to run.\n"+
		"An unknown index or id, or a deleted document, exits with status 2.", 2, 2)
	jsonOut := cmd.Flags().Bool("json", false, "print the document with its index, id, stream sequence and store time as JSON")
	cmd.RunE = clientRun(nf, func(ctx context.Context, c *client.Client, pos []string) error {
		doc, err := c.Get(ctx, pos[0], pos[1])
		if err != nil {
			return err
		}
		if *jsonOut {
			return printJSON(e.stdout, doc)
		}
		_, err = e.stdout.Write(append(bytes.TrimRight(doc.Source, "\r\n"), '\n'))
		return err
	})
	return cmd
}

func searchCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("search INDEX [TEXT]", "search an index", "Searches an index through the brokers and prints the top hits.\nTEXT is matched against the index's default field; --query takes a bleve\nquery in JSON instead.", 1, 2)
	fs := cmd.Flags()
	size := fs.Int("size", 10, "hits to return (0: none, only the total, facets and --suggest's suggestions)")
	from := fs.Int("from", 0, "hits to skip")
	fields := fs.String("fields", "*", "stored fields to return, comma-separated (* for all, empty for none)")
	queryJSON := fs.String("query", "", "bleve query in JSON, instead of TEXT")
	filterJSON := fs.String("filter", "", "bleve query in JSON every hit must match (does not score)")
	sortBy := fs.String("sort", "", "sort fields, comma-separated (-price for descending)")
	after := fs.String("after", "", "the page after this cursor (a sorted search's next, printed under its hits)")
	pit := fs.String("pit", "", "open a point in time held this long (1m, 30s; at most 1h): this page and the next ones given --pit-id read the documents of this moment")
	pitID := fs.String("pit-id", "", "read the point in time a page printed (pit: …), holding it for --pit again (default 1m)")
	pitClose := fs.Bool("pit-close", false, "with --pit-id, end the point in time once this page has read it (a walk's last page)")
	typos := fs.String("typos", "", "on or off: typo tolerance for this search (default: the index's query settings, query.typos)")
	prefix := fs.String("prefix", "", "on or off: search as you type, the last word also a prefix (default: the index's query settings, query.prefix)")
	suggest := fs.String("suggest", "", "a field whose words complete TEXT's last word: printed under the hits, most documents first (--size 0: the suggestions alone)")
	suggestTypos := fs.Bool("suggest-typos", false, "with --suggest, the field's words within the last word's typos too")
	highlight := fs.String("highlight", "", "stored text fields to highlight, comma-separated: each hit's best fragment of each, the query's terms in [brackets] (--json: <mark>, HTML-escaped)")
	profile := fs.Bool("profile", false, "show the plan and per-stage timings")
	jsonOut := fs.Bool("json", false, "print the raw JSON response")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		req := api.SearchRequest{Size: *size, From: *from, Profile: *profile}
		if len(pos) == 2 {
			req.Q = pos[1]
		}
		if *fields != "" {
			req.Fields = strings.Split(*fields, ",")
		}
		if *sortBy != "" {
			req.Sort = strings.Split(*sortBy, ",")
		}
		req.SearchAfter = *after
		if *pit != "" || *pitID != "" {
			req.PIT = &api.PITRequest{ID: *pitID, KeepAlive: *pit, Close: *pitClose}
		} else if *pitClose {
			return api.BadRequest("--pit-close goes with --pit-id NAME")
		}
		for _, o := range []struct {
			flag string
			v    *string
			dst  **bool
		}{{"typos", typos, &req.Typos}, {"prefix", prefix, &req.Prefix}} {
			switch *o.v {
			case "":
			case "on", "off":
				*o.dst = new(*o.v == "on")
			default:
				return api.BadRequest("--%s %q: want on or off", o.flag, *o.v)
			}
		}
		if *suggest != "" {
			req.Suggest = &api.SuggestRequest{Field: *suggest, Typos: *suggestTypos}
		} else if *suggestTypos {
			return api.BadRequest("--suggest-typos goes with --suggest FIELD")
		}
		if *size == 0 {
			req.Size = api.NoHits
		}
		if *highlight != "" {
			req.Highlight = &api.HighlightRequest{Fields: strings.Split(*highlight, ",")}
			if !*jsonOut { // for a terminal: plain text, terms bracketed
				req.Highlight.PreTag, req.Highlight.PostTag, req.Highlight.Encoder = "[", "]", api.EncoderNone
			}
		}
		if *queryJSON != "" {
			if !json.Valid([]byte(*queryJSON)) {
				return api.BadRequest("--query is not valid JSON")
			}
			req.Query = json.RawMessage(*queryJSON)
		}
		if *filterJSON != "" {
			if !json.Valid([]byte(*filterJSON)) {
				return api.BadRequest("--filter is not valid JSON")
			}
			req.Filter = json.RawMessage(*filterJSON)
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		body, _ := json.Marshal(req)
		raw, err := c.SearchRaw(ctx, pos[0], body)
		if err != nil {
			return err
		}
		if *jsonOut {
			_, err := e.stdout.Write(append(raw, '\n'))
			return err
		}
		var resp api.SearchResponse
		if err := json.Unmarshal(raw, &resp); err != nil {
			return err
		}
		printHits(e.stdout, &resp, req.From, req.Fields)
		return nil
	}
	return cmd
}

// printHits prints a readable result list: rank, score, id and a name or
// title field if the hit has one, then on a second line the requested
// fields (in the order asked; for "*" every returned field, by name, but
// an "id" that repeats the hit's) and the sort values, if any.
func printHits(w io.Writer, resp *api.SearchResponse, from int, fields []string) {
	fmt.Fprintf(w, "%d hits in %.1f ms (%d/%d shards)\n", resp.Total, resp.TookMS, resp.Shards.Successful, resp.Shards.Total)
	for _, f := range resp.Shards.Failures {
		fmt.Fprintf(w, "  shard %d failed: %s\n", f.Shard, f.Reason)
	}
	all := slices.Contains(fields, "*")
	for i, h := range resp.Hits {
		title, titleKey := "", ""
		for _, k := range []string{"name", "title"} {
			if v, ok := h.Fields[k].(string); ok {
				title, titleKey = v, k
				break
			}
		}
		fmt.Fprintf(w, "%3d. %-7.3f %s  %s\n", from+i+1, h.Score, h.ID, title)
		keys := fields
		if all {
			keys = slices.Sorted(maps.Keys(h.Fields))
		}
		var parts []string
		for _, k := range keys {
			if v, ok := h.Fields[k]; ok && k != titleKey && !(k == "id" && v == h.ID) {
				parts = append(parts, k+"="+shortValue(v))
			}
		}
		if len(h.Sort) > 0 {
			parts = append(parts, "sort="+shortValue(h.Sort))
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "              %s\n", strings.Join(parts, "  "))
		}
		for _, k := range slices.Sorted(maps.Keys(h.Highlight)) {
			for _, frag := range h.Highlight[k] {
				fmt.Fprintf(w, "              %s: %s\n", k, frag)
			}
		}
	}
	if resp.Next != "" {
		fmt.Fprintf(w, "next: %s   (--after it for the page after)\n", resp.Next)
	}
	if resp.PIT != "" {
		fmt.Fprintf(w, "pit: %s   (--pit-id it to read the same moment)\n", resp.PIT)
	}
	if len(resp.Suggestions) > 0 {
		parts := make([]string, len(resp.Suggestions))
		for i, s := range resp.Suggestions {
			parts[i] = fmt.Sprintf("%s (%d)", s.Term, s.Count)
		}
		fmt.Fprintf(w, "suggestions: %s\n", strings.Join(parts, ", "))
	}
	if resp.Profile != nil {
		fmt.Fprintln(w, "profile:")
		for _, s := range resp.Profile.Stages {
			fmt.Fprintf(w, "  %-10s %8.3f ms  %s\n", s.Name, s.TookMS, s.Detail)
		}
	}
}

// shortValue renders a field value on one line: text as it is, numbers
// without exponent noise, lists comma-separated, anything else as JSON;
// cut at 60 characters.
func shortValue(v any) string {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case float64:
		s = strconv.FormatFloat(v, 'f', -1, 64)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = shortValue(e)
		}
		s = strings.Join(parts, ",")
	default:
		b, err := json.Marshal(v)
		if err != nil {
			b = fmt.Append(nil, v)
		}
		s = string(b)
	}
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "…"
	}
	return s
}
