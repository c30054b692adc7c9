package registry

import (
	"context"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/subject"
)

// Plugin binaries reach the registry through the admin API, never straight
// into the object store, so a team needs no JetStream access and its NATS
// permissions on quarry.v1.admin.<its indexes>.> are the whole boundary:
//
//  1. plugin.upload, once per chunk: the raw bytes, with headers
//     Quarry-Upload (an id the client picks) and Quarry-Upload-Offset.
//     Chunks are staged in the QUARRY_UPLOADS stream under the index's
//     team and the index, so any admin instance may take any chunk, and
//     a team's staged uploads are bounded over all its indexes
//     (meta.StageChunk checks every chunk).
//  2. plugin.register with {"upload": id, "digest": ...}: the registry
//     reads the chunks back, checks the bytes hash to the digest (a
//     truncated upload is refused here), stores the binary by digest,
//     validates it and records the version. The staged chunks are
//     dropped whatever the outcome.
//
// A client that gives up on a push (a chunk refused, the push cancelled)
// sends plugin.upload with the header Quarry-Upload-Drop and no body:
// the upload's staged chunks are dropped at once rather than held
// against the team's quota.

// UploadReply answers a staged chunk.
type UploadReply struct {
	// Received is the offset just past the staged chunk.
	Received int64 `json:"received"`
	// Dropped answers a drop.
	Dropped bool `json:"dropped,omitempty"`
}

// handleUpload stages one chunk of an upload, or drops an upload.
func (s *Service) handleUpload(ctx context.Context, index string, req *nats.Msg, a answer) {
	h := req.Header
	var reply *UploadReply
	var err error
	if h.Get(subject.HeaderUploadDrop) != "" {
		reply, err = s.dropStaged(ctx, index, h.Get(subject.HeaderUpload))
	} else {
		reply, err = s.stageChunk(ctx, index, h.Get(subject.HeaderUpload), h.Get(subject.HeaderUploadOffset), req.Data)
	}
	if err != nil {
		a.fail(err)
		return
	}
	a.json(reply)
}

func (s *Service) stageChunk(ctx context.Context, index, id, offset string, chunk []byte) (*UploadReply, error) {
	def, err := s.store.Index(ctx, index)
	if err != nil {
		return nil, err
	}
	if err := subject.ValidUploadID(id); err != nil {
		return nil, api.BadRequest("%s header: %v", subject.HeaderUpload, err)
	}
	off, err := strconv.ParseInt(offset, 10, 64)
	if err != nil || off < 0 {
		return nil, api.BadRequest("%s header must be a byte offset, got %q", subject.HeaderUploadOffset, offset)
	}
	received, err := s.store.StageChunk(ctx, def.TeamOf(), index, id, off, chunk)
	if err != nil {
		s.metrics.refusedChunk(def.TeamOf(), err)
		return nil, err
	}
	return &UploadReply{Received: received}, nil
}

// dropStaged drops a staged upload of index.
func (s *Service) dropStaged(ctx context.Context, index, id string) (*UploadReply, error) {
	def, err := s.store.Index(ctx, index)
	if err != nil {
		return nil, err
	}
	if err := subject.ValidUploadID(id); err != nil {
		return nil, api.BadRequest("%s header: %v", subject.HeaderUpload, err)
	}
	if err := s.store.DropUpload(ctx, def.TeamOf(), index, id); err != nil {
		return nil, err
	}
	return &UploadReply{Dropped: true}, nil
}

// registerUpload is register, the request's staged upload (if it names
// one) dropped whatever the outcome: a refused request, a binary that
// fails its digest or validation, or one that is stored.
func (s *Service) registerUpload(ctx context.Context, def api.IndexDefinition, r *Request) (*api.PluginVersion, error) {
	if r.Upload != "" {
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := s.store.DropUpload(dctx, def.TeamOf(), def.Name, r.Upload); err != nil && api.CodeOf(err) != api.CodeBadRequest {
				s.cfg.Logger.Warn("drop staged upload", "index", def.Name, "upload", r.Upload, "err", err)
			}
		}()
	}
	return s.register(ctx, def, r)
}

// uploaded returns the binary of a register request: the staged upload
// it names, checked against its digest, or (with no upload) the
// stored binary of a version already pushed under this name to this index,
// so that a team can only ever register bytes it uploaded itself.
func (s *Service) uploaded(ctx context.Context, index string, r *Request) ([]byte, error) {
	if r.Upload == "" {
		if _, err := s.store.PluginVersion(ctx, index, r.Name, r.Digest); err != nil {
			return nil, api.NotFound("plugin %s has no version %s on index %q: upload the binary (quarry plugin push)", r.Name, r.Digest, index)
		}
		return s.store.PluginBinary(ctx, r.Digest)
	}
	def, err := s.store.Index(ctx, index)
	if err != nil {
		return nil, err
	}
	wasm, err := s.store.AssembleUpload(ctx, def.TeamOf(), index, r.Upload)
	if err != nil {
		return nil, err
	}
	// The staged chunks are no longer needed whatever happens next: they
	// do not count against the team's quota while the binary is validated.
	if err := s.store.DropUpload(context.WithoutCancel(ctx), def.TeamOf(), index, r.Upload); err != nil {
		s.cfg.Logger.Warn("drop staged upload", "index", index, "upload", r.Upload, "err", err)
	}
	if got := meta.PluginDigest(wasm); got != r.Digest {
		return nil, api.BadRequest("the uploaded %d bytes hash to %s, not %s (a truncated or corrupted upload): push again", len(wasm), got, r.Digest)
	}
	return wasm, nil // stored by register once it is valid: refused bytes are not kept
}
