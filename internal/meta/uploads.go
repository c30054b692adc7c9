package meta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
)

// errCodeStreamStoreFailed is JetStream's code for a store refusing a
// message, e.g. a DiscardNew stream at its byte limit (JSStreamStoreFailedF).
const errCodeStreamStoreFailed jetstream.ErrorCode = 10077

// StageChunk stores one chunk of a plugin upload to index. A chunk sent
// twice (a retry) is stored once. It refuses an upload that would grow
// past MaxPluginBytes.
func (s *Store) StageChunk(ctx context.Context, index, id string, offset int64, chunk []byte) error {
	if err := subject.ValidUploadID(id); err != nil {
		return api.BadRequest("%v", err)
	}
	if offset < 0 || offset+int64(len(chunk)) > MaxPluginBytes {
		return api.BadRequest("upload chunk at offset %d (%d bytes) goes past the plugin size limit of %d bytes", offset, len(chunk), MaxPluginBytes)
	}
	if offset == 0 { // a new upload: within the index's staging quota?
		staged, err := s.stagedUploads(ctx, index)
		if err != nil {
			return err
		}
		if _, again := staged[subject.Upload(index, id)]; !again && len(staged) >= MaxStagedUploads {
			return &api.Error{Code: api.CodeOverloaded, RetryAfterMS: 60_000, Message: fmt.Sprintf(
				"index %q has %d plugin uploads staged, its quota: register them (quarry plugin push finishes what it starts) or wait, they expire an hour after their last chunk", index, len(staged))}
		}
	}
	msg := nats.NewMsg(subject.Upload(index, id))
	msg.Header.Set(subject.HeaderUploadOffset, strconv.FormatInt(offset, 10))
	msg.Header.Set(nats.MsgIdHdr, id+"."+strconv.FormatInt(offset, 10))
	msg.Data = chunk
	if _, err := s.JS.PublishMsg(ctx, msg); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeStreamStoreFailed {
			return api.Errorf(api.CodeUnavailable, "plugin upload staging is full; try again later")
		}
		return fmt.Errorf("stage upload %s chunk at %d: %w", id, offset, err)
	}
	return nil
}

// MaxStagedUploads is how many uploads one index may have staged at once
// (each at most MaxPluginBytes): one team cannot fill the staging stream
// that every team shares.
const MaxStagedUploads = 4

// stagedUploads returns the subjects of the uploads staged for index, with
// their chunk counts.
func (s *Store) stagedUploads(ctx context.Context, index string) (map[string]uint64, error) {
	info, err := s.Uploads.Info(ctx, jetstream.WithSubjectFilter(subject.UploadsPrefix+"."+index+".*"))
	if err != nil {
		return nil, fmt.Errorf("staged uploads of %q: %w", index, err)
	}
	return info.State.Subjects, nil
}

// AssembleUpload reads a staged upload back in order. It fails with
// api.ErrNotFound if nothing was staged under id for index, and with
// api.ErrBadRequest if bytes are missing (a chunk lost or expired).
func (s *Store) AssembleUpload(ctx context.Context, index, id string) ([]byte, error) {
	if err := subject.ValidUploadID(id); err != nil {
		return nil, api.BadRequest("%v", err)
	}
	var out []byte
	var bad error // a chunk that does not fit, returned as is
	var pending int
	read := func(m jetstream.Msg) error {
		off, err := strconv.ParseInt(m.Headers().Get(subject.HeaderUploadOffset), 10, 64)
		switch {
		case err != nil:
			bad = fmt.Errorf("upload %s: chunk without an offset", id)
		case off+int64(len(m.Data())) <= int64(len(out)):
			return nil // a retried chunk already read
		case off != int64(len(out)):
			bad = api.BadRequest("upload %s is missing bytes %d to %d (a chunk was lost or expired): push the binary again", id, len(out), off)
		default:
			out = append(out, m.Data()...)
		}
		return bad
	}
	// While a cluster member is lost, JetStream may not answer for a
	// moment (no responders, a leader being elected): read again then.
	err := untilReady(ctx, slog.Default(), "upload "+id, func(ctx context.Context) (err error) {
		out, bad = out[:0], nil
		pending, err = s.readSubject(ctx, subject.UploadsStream, subject.Upload(index, id), 0, read)
		if bad != nil {
			return nil // not JetStream's: returned below as it is
		}
		return err
	})
	if bad != nil {
		return nil, bad
	}
	if err != nil {
		return nil, fmt.Errorf("read upload %s: %w", id, err)
	}
	if pending == 0 {
		return nil, api.NotFound("no upload %s to index %q (it expires an hour after its last chunk): push the binary again", id, index)
	}
	return out, nil
}

// DropUpload removes a staged upload.
func (s *Store) DropUpload(ctx context.Context, index, id string) error {
	if err := s.Uploads.Purge(ctx, jetstream.WithPurgeSubject(subject.Upload(index, id))); err != nil {
		return fmt.Errorf("drop upload %s: %w", id, err)
	}
	return nil
}
