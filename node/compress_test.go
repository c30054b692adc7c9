package node

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/wire"
)

// A searcher compresses a large reply for a requester in another process
// and not for one in its own (wire.ReplyThreshold): there the reply never
// leaves memory, and zstd was 40% of the CPU of 1,000-hit searches. Both
// replies decode to the same hits.
func TestReplyCompressedOnlyAcrossProcesses(t *testing.T) {
	n := startNode(t)
	corpusIndex(t, n, "zip", 1, 300, api.QuerySettings{})
	ask := func(sameProcess bool) (string, wire.ShardResponse) {
		t.Helper()
		msg := nats.NewMsg(subject.Shard("zip", 0))
		if err := wire.Encode(msg, &wire.ShardRequest{Query: []byte(`{"match_all":{}}`), K: 300, Fields: []string{"*"}}, wire.CompressThreshold); err != nil {
			t.Fatal(err)
		}
		if sameProcess {
			wire.MarkProcess(msg.Header)
		}
		reply, err := n.Conn().RequestMsg(msg, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var out wire.ShardResponse
		if err := wire.DecodeShardResponse(reply, &out); err != nil {
			t.Fatal(err, reply.Header)
		}
		if len(reply.Data) < wire.CompressThreshold && reply.Header.Get(subject.HeaderEncoding) == "" {
			t.Fatalf("the reply is %d bytes: too small to tell", len(reply.Data))
		}
		return reply.Header.Get(subject.HeaderEncoding), out
	}
	other, fromOther := ask(false)
	same, fromSame := ask(true)
	if other != "zstd" || same != "" {
		t.Fatalf("encoding for another process %q, for this one %q; want zstd and none", other, same)
	}
	if len(fromSame.Hits) != 300 || len(fromOther.Hits) != 300 || string(fromSame.Hits[7].FieldsJSON) != string(fromOther.Hits[7].FieldsJSON) {
		t.Fatalf("the replies differ: %d and %d hits", len(fromSame.Hits), len(fromOther.Hits))
	}
}
