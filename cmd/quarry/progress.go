package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// progress draws a one-line progress bar (docs, docs/s, ETA when the input
// size is known) on a terminal, or a line every few seconds otherwise.
type progress struct {
	w     io.Writer
	total int64
	off   bool
	tty   bool
	start time.Time
	mu    sync.Mutex
	last  time.Time
	drawn bool
}

func newProgress(w io.Writer, total int64, off bool) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil {
			tty = st.Mode()&os.ModeCharDevice != 0
		}
	}
	return &progress{w: w, total: total, off: off, tty: tty, start: time.Now()}
}

func (p *progress) update(docs int, bytes int64) {
	if p.off {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	every := 100 * time.Millisecond
	if !p.tty {
		every = 3 * time.Second
	}
	if now.Sub(p.last) < every {
		return
	}
	p.last = now
	elapsed := now.Sub(p.start).Seconds()
	rate := float64(docs) / max(elapsed, 1e-9)
	msg := fmt.Sprintf("%d docs  %.0f docs/s", docs, rate)
	if p.total > 0 && bytes > 0 {
		frac := float64(bytes) / float64(p.total)
		eta := time.Duration(elapsed/frac*(1-frac)) * time.Second
		const width = 30
		n := int(frac * width)
		bar := make([]byte, width)
		for i := range bar {
			bar[i] = ' '
			if i < n {
				bar[i] = '='
			}
		}
		msg = fmt.Sprintf("[%s] %3.0f%%  %s  ETA %s", bar, frac*100, msg, eta.Round(time.Second))
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r%-80s", msg)
		p.drawn = true
	} else {
		fmt.Fprintln(p.w, msg)
	}
}

func (p *progress) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}
