package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/cmdline"
)

// progress shows a bulk ingest's progress: on a terminal, a bar redrawn in
// place; otherwise (a log, a pipe) a plain line every so often. It counts
// documents indexed (searchable), not lines read or stored: reading and
// storing run far ahead of indexing, so a bar fed by them reached 95% at
// "50,000 docs/s, ETA 0s" and then waited on the indexer.
type progress struct {
	w     io.Writer
	total int64 // input bytes; 0 when unknown (stdin)
	off   bool
	tty   bool
	every time.Duration // between plain lines

	last    time.Duration // Elapsed when last shown
	shown   bool          // the latest update was shown
	drawn   bool          // a bar is on the terminal's line
	latest  client.BulkProgress
	started bool
}

// newProgress writes to w (a bar if it is a terminal, else a line every
// every); total is the input's size in bytes, 0 if unknown.
func newProgress(w io.Writer, total int64, off bool, every time.Duration) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil {
			tty = st.Mode()&os.ModeCharDevice != 0
		}
	}
	return &progress{w: w, total: total, off: off, tty: tty, every: every}
}

// update takes the ingest's progress (client.BulkOptions.OnProgress).
func (p *progress) update(bp client.BulkProgress) {
	if p.off {
		return
	}
	p.latest, p.shown = bp, false
	interval := p.every
	if p.tty {
		interval = 100 * time.Millisecond
	}
	if p.started && bp.Elapsed-p.last < interval {
		return
	}
	p.show()
}

func (p *progress) show() {
	p.started, p.last, p.shown = true, p.latest.Elapsed, true
	msg := p.line(p.latest)
	if p.tty {
		fmt.Fprintf(p.w, "\r%-100s", msg)
		p.drawn = true
	} else {
		fmt.Fprintln(p.w, msg)
	}
}

// done ends the display: the last state is shown, and a bar's line ended.
func (p *progress) done() {
	if p.off || !p.started && p.latest.Elapsed == 0 {
		return
	}
	if !p.shown {
		p.show()
	}
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

// line renders one progress report: documents indexed out of those
// expected (the lines read so far, extrapolated to the whole input by
// bytes until it is all read), the indexing rate and the time left at
// that rate. With no searcher to ask, the stored count stands in, and the
// line says so.
func (p *progress) line(bp client.BulkProgress) string {
	done, verb := bp.Indexed, "indexed"
	if done < 0 {
		done, verb = bp.Stored, "stored"
	}
	want := 0 // documents expected in all; 0: unknown
	switch {
	case bp.ReadAll:
		want = bp.Lines - bp.Failed
	case p.total > 0 && bp.Bytes > 0:
		want = int(float64(bp.Lines-bp.Failed) * float64(p.total) / float64(bp.Bytes))
	}
	secs := bp.Elapsed.Seconds()
	rate := float64(done) / max(secs, 1e-9)
	var b strings.Builder
	if want > 0 {
		frac := min(float64(done)/float64(want), 1)
		if p.tty {
			const width = 30
			n := int(frac * width)
			fmt.Fprintf(&b, "[%s%s] ", strings.Repeat("=", n), strings.Repeat(" ", width-n))
		}
		approx := ""
		if !bp.ReadAll {
			approx = "≈"
		}
		fmt.Fprintf(&b, "%3.0f%%  %s/%s%s %s", frac*100, cmdline.Thousands(int64(done)), approx, cmdline.Thousands(int64(want)), verb)
	} else {
		fmt.Fprintf(&b, "%s %s", cmdline.Thousands(int64(done)), verb)
	}
	fmt.Fprintf(&b, "  %s docs/s", cmdline.Thousands(int64(rate)))
	switch {
	case bp.Publishing && done >= want && want > 0:
		b.WriteString("  publishing the snapshot")
	case want > done && rate > 0:
		eta := time.Duration(float64(want-done) / rate * float64(time.Second))
		fmt.Fprintf(&b, "  ETA %s", eta.Round(time.Second))
	}
	var notes []string
	if verb == "indexed" {
		notes = append(notes, cmdline.Thousands(int64(bp.Stored))+" stored")
	} else {
		notes = append(notes, "no searcher answers: indexing cannot be followed")
	}
	if bp.Failed > 0 {
		notes = append(notes, cmdline.Thousands(int64(bp.Failed))+" refused")
	}
	if !p.tty {
		notes = append(notes, bp.Elapsed.Round(100*time.Millisecond).String())
	}
	fmt.Fprintf(&b, "  (%s)", strings.Join(notes, ", "))
	return b.String()
}
