package registry

import (
	"context"
	"strconv"

	"github.com/nats-io/nats.go/micro"

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
//     own subject, so any admin instance may take any chunk.
//  2. plugin.register with {"upload": id, "digest": ...}: the registry
//     reads the chunks back, checks the bytes hash to the digest (a
//     truncated upload is refused here), stores the binary by digest,
//     validates it and records the version.

// UploadReply answers a staged chunk.
type UploadReply struct {
	// Received is the offset just past the staged chunk.
	Received int64 `json:"received"`
}

// handleUpload stages one chunk of an upload.
func (s *Service) handleUpload(ctx context.Context, index string, req micro.Request) {
	reply, err := s.stageChunk(ctx, index, req.Headers().Get(subject.HeaderUpload), req.Headers().Get(subject.HeaderUploadOffset), req.Data())
	if err != nil {
		s.respondError(req, err)
		return
	}
	req.RespondJSON(reply)
}

func (s *Service) stageChunk(ctx context.Context, index, id, offset string, chunk []byte) (*UploadReply, error) {
	if _, err := s.store.Index(ctx, index); err != nil {
		return nil, err
	}
	if err := subject.ValidUploadID(id); err != nil {
		return nil, api.BadRequest("%s header: %v", subject.HeaderUpload, err)
	}
	off, err := strconv.ParseInt(offset, 10, 64)
	if err != nil || off < 0 {
		return nil, api.BadRequest("%s header must be a byte offset, got %q", subject.HeaderUploadOffset, offset)
	}
	if len(chunk) == 0 {
		return nil, api.BadRequest("upload chunk at offset %d is empty", off)
	}
	if err := s.store.StageChunk(ctx, index, id, off, chunk); err != nil {
		return nil, err
	}
	return &UploadReply{Received: off + int64(len(chunk))}, nil
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
	wasm, err := s.store.AssembleUpload(ctx, index, r.Upload)
	if err != nil {
		return nil, err
	}
	// The staged chunks are no longer needed whatever happens next.
	defer func() {
		if err := s.store.DropUpload(context.WithoutCancel(ctx), index, r.Upload); err != nil {
			s.cfg.Logger.Warn("drop staged upload", "index", index, "upload", r.Upload, "err", err)
		}
	}()
	if got := meta.PluginDigest(wasm); got != r.Digest {
		return nil, api.BadRequest("the uploaded %d bytes hash to %s, not %s (a truncated or corrupted upload): push again", len(wasm), got, r.Digest)
	}
	return wasm, nil // stored by register once it is valid: refused bytes are not kept
}
