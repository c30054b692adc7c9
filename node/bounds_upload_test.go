package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	dto "github.com/prometheus/client_model/go"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/wasmtest"
)

// uploadChunk sends one plugin.upload chunk of an upload to index as a
// team's client would and returns the bytes the registry says it holds.
func uploadChunk(t *testing.T, nc *nats.Conn, index, id string, offset int64, chunk []byte) (int64, error) {
	t.Helper()
	msg := nats.NewMsg(subject.Admin(index, "plugin.upload"))
	msg.Header.Set(subject.HeaderUpload, id)
	msg.Header.Set(subject.HeaderUploadOffset, strconv.FormatInt(offset, 10))
	msg.Data = chunk
	reply, err := nc.RequestMsg(msg, 30*time.Second)
	if err != nil {
		return 0, err
	}
	if e := reply.Header.Get(micro.ErrorHeader); e != "" {
		return 0, errors.New(e)
	}
	var r struct {
		Received int64 `json:"received"`
	}
	if err := json.Unmarshal(reply.Data, &r); err != nil {
		return 0, fmt.Errorf("reply %q: %w", reply.Data, err)
	}
	return r.Received, nil
}

// stagedOf returns the uploads staged in QUARRY_UPLOADS whose subjects
// hold one of indexes as a token (whatever the subject's layout).
func stagedOf(t *testing.T, n *Node, indexes ...string) int {
	t.Helper()
	info, err := n.store.Uploads.Info(context.Background(), jetstream.WithSubjectFilter(subject.UploadsPrefix+".>"))
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for subj := range info.State.Subjects {
		for _, index := range indexes {
			if strings.Contains(subj, "."+index+".") {
				count++
				break
			}
		}
	}
	return count
}

// TestUploadBounds: every chunk of a plugin upload is held to the chunk
// size, to offsets within the largest module allowed (no overflow), to
// order (no gaps, no run of tiny chunks) and to its team's quota of staged
// uploads, counted over all the team's indexes; another team is not
// touched. Before, a chunk was checked against the quota at offset 0
// only, never against the chunk size, and offset+length could overflow
// ("received":-9223372036854775804), so a team could fill the staging
// every team shares and the others' pushes got 503 for up to an hour.
func TestUploadBounds(t *testing.T) {
	t.Parallel()
	n := startConfig(t, Config{Broker: &broker.Config{}})
	ctx := context.Background()
	c, nc := n.Client(), n.Conn()
	// Team food has many indexes; books one.
	var foods []string
	for i := range meta.MaxStagedUploads + 2 {
		foods = append(foods, fmt.Sprint("food", i))
		if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: foods[i], Shards: 1, Team: "food"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "books", Shards: 1, Team: "books"}); err != nil {
		t.Fatal(err)
	}
	full := bytes.Repeat([]byte{'w'}, meta.MaxUploadChunkBytes)
	cases := []struct {
		name   string
		offset int64
		chunk  []byte
		want   string
	}{
		{"7 MiB chunk", 1, make([]byte, 7<<20), "upload chunk of 7340032 bytes is over the 524288-byte chunk size"},
		{"chunk one byte over", 0, make([]byte, meta.MaxUploadChunkBytes+1), "over the 524288-byte chunk size"},
		{"offset 2^63-1", math.MaxInt64, []byte("wasm"), "goes past the plugin size limit of 67108864 bytes"},
		{"offset 2^63-4", math.MaxInt64 - 3, []byte("wasm"), "goes past the plugin size limit"},
		{"ends one byte past the size limit", meta.MaxPluginBytes - 3, []byte("wasm"), "goes past the plugin size limit"},
		{"a new upload not at offset 0", 1, []byte("wasm"), "its first chunk must be at offset 0, not 1"},
		{"a new upload far out", meta.MaxPluginBytes - 4, []byte("wasm"), "its first chunk must be at offset 0"},
	}
	for i, tc := range cases {
		got, err := uploadChunk(t, nc, "food0", fmt.Sprint("bad", i), tc.offset, tc.chunk)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: received %d, err %v; want an error containing %q", tc.name, got, err, tc.want)
		}
	}
	if got := stagedOf(t, n, foods...); got != 0 {
		t.Fatalf("refused chunks left %d uploads staged", got)
	}

	// Order within an upload: no gap, no overlap, a retry taken once,
	// and only the last chunk small.
	if got, err := uploadChunk(t, nc, "food0", "order", 0, full); err != nil || got != int64(len(full)) {
		t.Fatalf("first chunk: received %d, %v", got, err)
	}
	if got, err := uploadChunk(t, nc, "food0", "order", 0, full); err != nil || got != int64(len(full)) {
		t.Errorf("a retried chunk: received %d, %v; want it taken, once", got, err)
	}
	if _, err := uploadChunk(t, nc, "food0", "order", int64(len(full))+1, []byte("gap")); err == nil || !strings.Contains(err.Error(), "its next chunk must start at 524288, not 524289") {
		t.Errorf("a gap: %v", err)
	}
	if _, err := uploadChunk(t, nc, "food0", "order", 10, full); err == nil || !strings.Contains(err.Error(), "must start at 524288") {
		t.Errorf("an overlap: %v", err)
	}
	if got, err := uploadChunk(t, nc, "food0", "order", int64(len(full)), []byte("tiny")); err != nil || got != int64(len(full))+4 {
		t.Errorf("a small last chunk: received %d, %v", got, err)
	}
	if _, err := uploadChunk(t, nc, "food0", "order", int64(len(full))+4, []byte("more")); err == nil || !strings.Contains(err.Error(), "only the last chunk may be under 4096 bytes") {
		t.Errorf("a chunk after a small one: %v", err)
	}

	// The quota is the team's, over all its indexes, on every chunk.
	for i := 1; i < meta.MaxStagedUploads; i++ { // "order" is the first
		if _, err := uploadChunk(t, nc, fmt.Sprint("food", i), "q", 0, []byte("wasm")); err != nil {
			t.Fatalf("upload %d of the team's quota: %v", i, err)
		}
	}
	over := fmt.Sprintf("team \"food\" has %d plugin uploads staged, its quota of %d", meta.MaxStagedUploads, meta.MaxStagedUploads)
	for _, index := range []string{"food0", fmt.Sprint("food", meta.MaxStagedUploads), fmt.Sprint("food", meta.MaxStagedUploads+1)} {
		if _, err := uploadChunk(t, nc, index, "qover", 0, []byte("wasm")); err == nil || !strings.Contains(err.Error(), over) {
			t.Errorf("a 5th upload, on %s: %v; want %q", index, err, over)
		}
	}
	if got := stagedOf(t, n, foods...); got != meta.MaxStagedUploads {
		t.Errorf("team food has %d uploads staged, want its quota of %d", got, meta.MaxStagedUploads)
	}
	// The refusals are counted by team and limit.
	for limit, want := range map[string]float64{"chunk_size": 2, "plugin_size": 3, "order": 5, "quota": 3} {
		if got := counter(t, n, "quarry_registry_upload_refusals_total", map[string]string{"team": "food", "limit": limit}); got != want {
			t.Errorf("refusals for %s: %g, want %g", limit, got, want)
		}
	}
	// Another team's push is not touched.
	suffix := watModule(t)
	if v, err := c.PushPlugin(ctx, "books", "suffix", suffix, client.PushOptions{Kind: "rewriter"}); err != nil || !v.Valid {
		t.Fatalf("books' push beside food's full quota: %+v %v", v, err)
	}
	// Food's own push waits for its quota, and says so.
	if _, err := c.PushPlugin(ctx, "food1", "suffix", suffix, client.PushOptions{Kind: "rewriter"}); !errors.Is(err, api.ErrOverloaded) || !strings.Contains(err.Error(), over) {
		t.Errorf("food's push over its quota: %v", err)
	}
}

// counter reads a counter (or a gauge) of the node's metrics, summed over
// the series whose labels include labels.
func counter(t *testing.T, n *Node, name string, labels map[string]string) float64 {
	t.Helper()
	fams, err := n.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for k, v := range labels {
				if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == k && l.GetValue() == v }) {
					continue series
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// watModule is a small valid rewriter.
func watModule(t *testing.T) []byte {
	t.Helper()
	return wasmtest.WATFile(t, "../examples/plugins/wat/suffix.wat")
}

// TestFailedPushReleasesUpload: a push that fails releases what it staged
// at once, whether the registry refused it (a bad name, found only when
// it registers) or the client gave up (its context cancelled mid-upload),
// so failed pushes never hold the team's quota of staged uploads. Before,
// they held it until the upload expired, an hour later.
func TestFailedPushReleasesUpload(t *testing.T) {
	t.Parallel()
	n := startConfig(t, Config{Broker: &broker.Config{}})
	ctx := context.Background()
	c := n.Client()
	if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "menu", Shards: 1, Team: "food"}); err != nil {
		t.Fatal(err)
	}
	suffix := watModule(t)
	for range meta.MaxStagedUploads + 1 {
		if _, err := c.PushPlugin(ctx, "menu", "Bad Name", suffix, client.PushOptions{Kind: "rewriter"}); !errors.Is(err, api.ErrBadRequest) {
			t.Fatalf("a push under a bad name: %v", err)
		}
	}
	if got := stagedOf(t, n, "menu"); got != 0 {
		t.Errorf("refused registers left %d uploads staged", got)
	}

	// Cancelled mid-upload: the push stops at the first chunk it sends
	// after the first one arrived.
	junk := bytes.Repeat([]byte("not a module "), 40*meta.MaxUploadChunkBytes/13)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	arrived, err := n.Conn().Subscribe(subject.Admin("menu", "plugin.upload"), func(*nats.Msg) { cancel() })
	if err != nil {
		t.Fatal(err)
	}
	defer arrived.Unsubscribe()
	_, pushErr := c.PushPlugin(pctx, "menu", "junk", junk, client.PushOptions{Kind: "rewriter"})
	if !errors.Is(pushErr, context.Canceled) {
		t.Fatalf("the cancelled push: %v", pushErr)
	}
	// The registry answers one index's plugin.upload requests in order:
	// once it answers a later one, it has staged the chunk the push sent
	// and (after the fix) dropped it.
	if _, err := uploadChunk(t, n.Conn(), "menu", "probe", 0, nil); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("probe: %v", err)
	}
	if got := stagedOf(t, n, "menu"); got != 0 {
		t.Errorf("the cancelled push left %d uploads staged", got)
	}
	// With nothing staged, the team pushes at once.
	if v, err := c.PushPlugin(ctx, "menu", "suffix", suffix, client.PushOptions{Kind: "rewriter"}); err != nil || !v.Valid {
		t.Fatalf("push after the failed ones: %+v %v", v, err)
	}
}
