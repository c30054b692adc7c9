package wire

import (
	"sync"

	"github.com/nats-io/nats.go"
)

// maxPooledBuffer is the largest buffer kept for reuse: a 10,000-hit
// shard response with every field is a few MB; one larger than this is
// left to the garbage collector rather than held by the pool.
const maxPooledBuffer = 32 << 20

// buffers holds encoding and decompression buffers between messages.
// A heavy search's shard responses are megabytes each; made anew every
// time (and grown by doubling as they are written), a 1,000-hit
// response's encode and decode made 898 KB of garbage (now 603 KB, the
// decoded hits), and every garbage collection it brings on stops the
// other teams' searches too (docs/performance.md, "Buffers that are
// reused, and which heavy request hurts").
var buffers = sync.Pool{New: func() any { return new([]byte) }}

// getBuffer returns an empty buffer of capacity at least n.
func getBuffer(n int) *[]byte {
	p := buffers.Get().(*[]byte)
	if cap(*p) < n {
		*p = make([]byte, 0, n)
	}
	*p = (*p)[:0]
	return p
}

// putBuffer gives b back for reuse, unless it is over maxPooledBuffer.
func putBuffer(b *[]byte) {
	if cap(*b) > maxPooledBuffer {
		return
	}
	*b = (*b)[:0]
	buffers.Put(b)
}

// Recycle gives msg's payload, made by Encode or EncodeShardResponse, back for
// reuse once the message is sent (nats.go copies a payload into its
// write buffer before Publish returns). Neither msg.Data nor any slice
// of it may be used afterwards; msg.Data is set to nil.
func Recycle(msg *nats.Msg) {
	if cap(msg.Data) == 0 {
		return
	}
	b := msg.Data[:0]
	msg.Data = nil
	putBuffer(&b)
}
