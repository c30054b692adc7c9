package shard

import "sync"

// maxTrackedUpdates is how many of its latest updates a replica remembers
// the stream sequences of: the most a search's statistics can be allowed
// to miss (wire.ShardRequest.MaxStaleUpdates) and still be checked.
const maxTrackedUpdates = 4096

// updateLog remembers the stream sequences of the latest updates a replica
// applied, in order, so that it can count those after any sequence: how
// many of its updates statistics counted at that sequence miss.
type updateLog struct {
	mu    sync.Mutex
	base  uint64   // the replica's sequence when opened: the log starts after it
	seqs  []uint64 // a ring of the latest sequences, oldest at start
	start int
	lost  bool // older sequences fell out of the ring
}

func (l *updateLog) init(base uint64) {
	l.base = base
	l.seqs = make([]uint64, 0, maxTrackedUpdates)
}

// add records applied sequences, in stream order.
func (l *updateLog) add(seqs []uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range seqs {
		if len(l.seqs) < cap(l.seqs) {
			l.seqs = append(l.seqs, s)
			continue
		}
		l.seqs[l.start] = s
		l.start = (l.start + 1) % len(l.seqs)
		l.lost = true
	}
}

// since returns how many updates the replica applied after stream sequence
// seq, and false when it cannot know them all (seq is older than what the
// replica was opened with, or than it remembers): then it may be any
// number, at least the returned one.
func (l *updateLog) since(seq uint64) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.seqs)
	at := func(i int) uint64 { return l.seqs[(l.start+i)%n] }
	// The first logical index holding a sequence after seq.
	lo, hi := 0, n
	for lo < hi {
		mid := (lo + hi) / 2
		if at(mid) <= seq {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	count := n - lo
	known := seq >= l.base && (!l.lost || (n > 0 && at(0) <= seq))
	return count, known
}
