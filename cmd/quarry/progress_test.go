package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/client"
)

func TestProgressLine(t *testing.T) {
	t.Parallel()
	const total = 8000 * 100 // bytes: 8,000 lines of 100
	cases := []struct {
		name string
		size int64
		tty  bool
		p    client.BulkProgress
		want string
	}{
		{"reading: expected lines extrapolated, rate and ETA from indexed", total, false,
			client.BulkProgress{Elapsed: time.Second, Lines: 2000, Bytes: 200000, Stored: 2000, Indexed: 500},
			"  6%  500/≈8,000 indexed  500 docs/s  ETA 15s  (2,000 stored, 1s)"},
		{"all read and stored, indexing", total, false,
			client.BulkProgress{Elapsed: 4 * time.Second, Lines: 8000, Bytes: total, ReadAll: true, Stored: 7990, Failed: 10, Indexed: 2000},
			" 25%  2,000/7,990 indexed  500 docs/s  ETA 12s  (7,990 stored, 10 refused, 4s)"},
		{"indexed, publishing", total, false,
			client.BulkProgress{Elapsed: 16 * time.Second, Lines: 8000, Bytes: total, ReadAll: true, Stored: 8000, Indexed: 8000, Publishing: true},
			"100%  8,000/8,000 indexed  500 docs/s  publishing the snapshot  (8,000 stored, 16s)"},
		{"no searcher: the stored count, said so", total, false,
			client.BulkProgress{Elapsed: time.Second, Lines: 2000, Bytes: 200000, Stored: 2000, Indexed: -1},
			" 25%  2,000/≈8,000 stored  2,000 docs/s  ETA 3s  (no searcher answers: indexing cannot be followed, 1s)"},
		{"stdin: no size, no ETA", 0, false,
			client.BulkProgress{Elapsed: 2 * time.Second, Lines: 3000, Bytes: 300000, Stored: 3000, Indexed: 1000},
			"1,000 indexed  500 docs/s  (3,000 stored, 2s)"},
		{"terminal: a bar", total, true,
			client.BulkProgress{Elapsed: 4 * time.Second, Lines: 8000, Bytes: total, ReadAll: true, Stored: 8000, Indexed: 4000},
			"[===============               ]  50%  4,000/8,000 indexed  1,000 docs/s  ETA 4s  (8,000 stored)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &progress{total: tc.size, tty: tc.tty}
			if got := p.line(tc.p); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// Without a terminal: a plain line at the first report, then one every
// interval, and the last state when it ends; nothing when off.
func TestProgressLinesEvery(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := &progress{w: &buf, total: 10000, every: 3 * time.Second}
	for _, ms := range []int{250, 1000, 3100, 3200, 5000, 6200} {
		p.update(client.BulkProgress{Elapsed: time.Duration(ms) * time.Millisecond, Lines: ms, Bytes: int64(ms), Stored: ms, Indexed: ms / 2})
	}
	p.done()
	var times []string
	for line := range strings.Lines(buf.String()) {
		if strings.Contains(line, "\r") || strings.Contains(line, "[") {
			t.Errorf("a bar without a terminal: %q", line)
		}
		times = append(times, regexp.MustCompile(`, ([0-9.]+m?s)\)$`).FindStringSubmatch(strings.TrimSpace(line))[1])
	}
	if got := strings.Join(times, " "); got != "300ms 5s 6.2s" {
		t.Errorf("lines at %s, want 300ms 5s 6.2s:\n%s", got, buf.String())
	}

	buf.Reset()
	p = &progress{w: &buf, total: 1000, every: 3 * time.Second, off: true}
	p.update(client.BulkProgress{Elapsed: time.Second, Stored: 5})
	p.done()
	if buf.Len() != 0 {
		t.Errorf("quiet progress wrote %q", buf.String())
	}
}

// quarry ingest without a terminal prints plain lines that count
// documents indexed, ending with all of them.
func TestCLIIngestProgressLines(t *testing.T) {
	t.Parallel()
	url, _ := cluster(t, true)
	nf := []string{"--nats", url}
	if out, errOut, code := cli(t, "", append([]string{"index", "create", "p", "--shards", "3"}, nf...)...); code != 0 {
		t.Fatalf("index create: %d %s %s", code, out, errOut)
	}
	var docs strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&docs, `{"id":"d%d","text":"spicy noodles %d"}`+"\n", i, i)
	}
	out, errOut, code := cli(t, docs.String(), append([]string{"ingest", "p", "-", "--progress-every", "50ms"}, nf...)...)
	if code != 0 || !strings.Contains(out, "3000 stored") {
		t.Fatalf("ingest: %d %s %s", code, out, errOut)
	}
	// Stdin has no size: a percentage only once it is all read. Until a
	// searcher answers, the stored count stands in.
	line := regexp.MustCompile(`^(?:\d+%  )?([\d,]+)(?:/[\d,]+)? (indexed|stored)  [\d,]+ docs/s  (?:ETA [\dhms]+  |publishing the snapshot  )?` +
		`\((?:[\d,]+ stored|no searcher answers: indexing cannot be followed), [\d.]+m?s\)$`)
	var counts []string
	for l := range strings.Lines(errOut) {
		m := line.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			t.Fatalf("not a progress line: %q\n%s", l, errOut)
		}
		counts = append(counts, m[1]+" "+m[2])
	}
	// The last line counts indexed documents (the searcher may still
	// trail the snapshot Bulk waited for), never fewer than before.
	prev := -1
	for i, c := range counts {
		n, err := strconv.Atoi(strings.ReplaceAll(strings.Fields(c)[0], ",", ""))
		if err != nil || n > 3000 || strings.HasSuffix(c, "indexed") && n < prev {
			t.Errorf("line %d: %s after %d", i, c, prev)
		}
		if strings.HasSuffix(c, "indexed") {
			prev = n
		}
	}
	if len(counts) == 0 || !strings.HasSuffix(counts[len(counts)-1], "indexed") || prev <= 0 {
		t.Errorf("progress lines %v do not end counting documents indexed\n%s", counts, errOut)
	}
	if _, errOut, code := cli(t, "", append([]string{"ingest", "p", "-", "--progress-every", "0s"}, nf...)...); code != 2 || !strings.Contains(errOut, "--progress-every must be positive") {
		t.Errorf("--progress-every 0s: %d %s", code, errOut)
	}
}
