package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
)

// BulkOptions tunes Bulk. Zero values are documented defaults.
type BulkOptions struct {
	// Window is how many publishes may await their acknowledgement at once
	// (default 2048, at most 8192).
	Window int
	// MaxErrors is how many line errors are kept in the result (default
	// 100); all of them are counted.
	MaxErrors int
	// NoSnapshot skips asking the indexer for a new generation at the end.
	NoSnapshot bool
	// Progress, if set, is called every 1,000 documents and at the end with
	// the lines read and the input bytes consumed.
	Progress func(lines int, bytes int64)
}

// BulkResult reports a bulk ingest.
type BulkResult struct {
	// Lines is the number of non-empty lines read.
	Lines int `json:"lines"`
	// Stored counts documents acknowledged by the stream.
	Stored int `json:"stored"`
	// Failed counts lines refused (bad JSON, no id, too big) or not stored.
	Failed int `json:"failed"`
	// Errors are the first MaxErrors failures, each naming its line.
	Errors []LineError `json:"errors,omitempty"`
	// LastSeq is the highest stream sequence stored.
	LastSeq uint64 `json:"last_seq"`
	// Snapshot is the generation published at the end.
	Snapshot *SnapshotResult `json:"snapshot,omitempty"`
}

// LineError is a refused line of a bulk input.
type LineError struct {
	Line int    `json:"line"`
	ID   string `json:"id,omitempty"`
	Err  string `json:"error"`
}

func (e LineError) String() string {
	if e.ID != "" {
		return fmt.Sprintf("line %d (id %q): %s", e.Line, e.ID, e.Err)
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Err)
}

type pendingAck struct {
	line int
	id   string
	fut  jetstream.PubAckFuture
}

// Bulk reads NDJSON documents from r and upserts them: good lines go in,
// bad lines are counted and reported, and, unless opts.NoSnapshot, a new
// generation including every stored document is published at the end. The
// error is non-nil only when the ingest could not go on (unknown index,
// lost connection, unreadable input); refused lines are in the result.
func (c *Client) Bulk(ctx context.Context, index string, r io.Reader, opts BulkOptions) (*BulkResult, error) {
	if opts.Window <= 0 {
		opts.Window = 2048
	}
	opts.Window = min(opts.Window, maxAsyncPending)
	if opts.MaxErrors <= 0 {
		opts.MaxErrors = 100
	}
	if _, err := c.definition(ctx, index); err != nil {
		return nil, err
	}
	res := &BulkResult{}
	fail := func(line int, id string, err error) {
		res.Failed++
		if len(res.Errors) < opts.MaxErrors {
			res.Errors = append(res.Errors, LineError{Line: line, ID: id, Err: err.Error()})
		}
	}
	pending := make([]pendingAck, 0, opts.Window)
	settle := func(p pendingAck) error {
		select {
		case ack := <-p.fut.Ok():
			res.Stored++
			res.LastSeq = max(res.LastSeq, ack.Sequence)
		case err := <-p.fut.Err():
			if errors.Is(err, context.Canceled) || ctx.Err() != nil {
				return ctx.Err()
			}
			fail(p.line, p.id, fmt.Errorf("not stored: %w", err))
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}

	br := bufio.NewReaderSize(r, 256<<10)
	var consumed int64
	lineNo := 0
	for {
		line, n, tooLong, err := readLine(br, c.opts.MaxDocBytes)
		consumed += int64(n)
		if n > 0 {
			lineNo++
		}
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			res.Lines++
			if tooLong {
				fail(lineNo, "", api.BadRequest("document is over the limit of %d bytes", c.opts.MaxDocBytes))
			} else if msg, merr := c.docMsg(ctx, index, line); merr != nil {
				fail(lineNo, "", merr)
			} else {
				if len(pending) == opts.Window {
					// Settle the older half of the window before publishing more.
					half := max(opts.Window/2, 1)
					for _, p := range pending[:half] {
						if serr := settle(p); serr != nil {
							return res, serr
						}
					}
					pending = pending[:copy(pending, pending[half:])]
				}
				_, _, id, _ := subject.ParseDoc(msg.Subject)
				fut, perr := c.js.PublishMsgAsync(msg)
				if errors.Is(perr, jetstream.ErrTooManyStalledMsgs) {
					// The connection is backed up: wait for every pending
					// ack, then try once more.
					for _, p := range pending {
						if serr := settle(p); serr != nil {
							return res, serr
						}
					}
					pending = pending[:0]
					fut, perr = c.js.PublishMsgAsync(msg)
				}
				if perr != nil {
					return res, fmt.Errorf("line %d: publish: %w", lineNo, perr)
				}
				pending = append(pending, pendingAck{line: lineNo, id: id, fut: fut})
			}
			if opts.Progress != nil && res.Lines%1000 == 0 {
				opts.Progress(res.Lines, consumed)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, fmt.Errorf("read line %d: %w", lineNo+1, err)
		}
	}
	for _, p := range pending {
		if err := settle(p); err != nil {
			return res, err
		}
	}
	if opts.Progress != nil {
		opts.Progress(res.Lines, consumed)
	}
	if opts.NoSnapshot || res.Stored == 0 {
		return res, nil
	}
	snap, err := c.Snapshot(ctx, index, res.LastSeq)
	if err != nil {
		return res, err
	}
	res.Snapshot = &snap
	return res, nil
}

// readLine reads one line (without its newline). A line longer than max
// is consumed and reported as tooLong with no content. n is the bytes
// consumed including the newline.
func readLine(br *bufio.Reader, max int) (line []byte, n int, tooLong bool, err error) {
	for {
		chunk, rerr := br.ReadSlice('\n')
		n += len(chunk)
		if !tooLong {
			if len(line)+len(chunk) > max+2 { // +2: a "\r\n" line ending
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if rerr == bufio.ErrBufferFull {
			continue
		}
		if tooLong {
			return nil, n, true, rerr
		}
		return bytes.TrimRight(line, "\r\n"), n, false, rerr
	}
}
