package meta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
)

// errCodeStreamStoreFailed is JetStream's code for a store refusing a
// message, e.g. a DiscardNew stream at its byte limit (JSStreamStoreFailedF).
const errCodeStreamStoreFailed jetstream.ErrorCode = 10077

// The bounds of plugin uploads (docs/teams.md, "What a team may cost the
// platform"). Every one is checked on every chunk.
const (
	// MaxUploadChunkBytes is the largest chunk of an upload (the client
	// sends chunks this size, smaller when the server's payload limit is).
	MaxUploadChunkBytes = 512 << 10
	// MinUploadChunkBytes is the smallest chunk but an upload's last: an
	// upload's chunks, each a message with its own overhead, are at most
	// MaxPluginBytes/MinUploadChunkBytes+1.
	MinUploadChunkBytes = 4 << 10
	// MaxStagedUploads is how many uploads one team, over all its
	// indexes, may have staged at once (each at most MaxPluginBytes): one
	// team cannot fill the staging stream that every team shares (1 GiB).
	MaxStagedUploads = 4
	// UploadIdle is how long after its last chunk an unregistered upload
	// counts as abandoned: it no longer counts towards its team's quota
	// and is dropped when the team stages another.
	UploadIdle = 2 * time.Minute
)

// UploadLimitError is a chunk refused for one of the bounds of uploads:
// it wraps the *api.Error the caller gets, and names the bound for a
// metric.
type UploadLimitError struct {
	// Limit names the bound: "chunk_size" (MaxUploadChunkBytes),
	// "plugin_size" (MaxPluginBytes), "order" (a gap, an overlap, a chunk
	// after a small one), "quota" (MaxStagedUploads) or "staging" (the
	// stream every team shares is full).
	Limit string
	Err   *api.Error
}

func (e *UploadLimitError) Error() string { return e.Err.Error() }

// Unwrap returns the *api.Error.
func (e *UploadLimitError) Unwrap() error { return e.Err }

func uploadLimit(limit string, err *api.Error) error {
	return &UploadLimitError{Limit: limit, Err: err}
}

// StageChunk stores one chunk of a plugin upload to index, of team (the
// index's IndexDefinition.TeamOf), and returns the bytes the upload then
// holds. Chunks come in order: the first at offset 0, each next one where
// the last ended; a chunk sent again (a retry) is stored once. It refuses
// a chunk over MaxUploadChunkBytes, one past MaxPluginBytes, one that
// leaves a gap, one after a chunk under MinUploadChunkBytes, and a new
// upload beyond the team's MaxStagedUploads (an api.ErrOverloaded error
// with a RetryAfterMS). On one admin instance the
// quota is exact (a team's chunks are staged one at a time); two
// instances may each let a team's new upload in at the same instant.
func (s *Store) StageChunk(ctx context.Context, team, index, id string, offset int64, chunk []byte) (received int64, err error) {
	if err := subject.ValidUploadID(id); err != nil {
		return 0, api.BadRequest("%v", err)
	}
	switch {
	case len(chunk) == 0:
		return 0, api.BadRequest("upload chunk at offset %d is empty", offset)
	case len(chunk) > MaxUploadChunkBytes:
		return 0, uploadLimit("chunk_size", api.BadRequest("upload chunk of %d bytes is over the %d-byte chunk size", len(chunk), MaxUploadChunkBytes))
	case offset < 0 || offset > MaxPluginBytes-int64(len(chunk)): // no sum: it cannot overflow
		return 0, uploadLimit("plugin_size", api.BadRequest("upload chunk at offset %d (%d bytes) goes past the plugin size limit of %d bytes", offset, len(chunk), MaxPluginBytes))
	}
	unlock := s.lockTeamUploads(team)
	defer unlock()
	subj := subject.Upload(team, index, id)
	last, err := s.lastChunk(ctx, subj)
	if err != nil {
		return 0, err
	}
	end := offset + int64(len(chunk))
	switch {
	case last.end == 0 && offset != 0:
		return 0, uploadLimit("order", api.BadRequest("upload %s has no bytes staged: its first chunk must be at offset 0, not %d (or it expired: push again)", id, offset))
	case last.end == 0:
		if err := s.checkStagingQuota(ctx, team, subj); err != nil {
			return 0, err
		}
	case end <= last.end:
		return last.end, nil // a retried chunk, staged already
	case offset != last.end:
		return 0, uploadLimit("order", api.BadRequest("upload %s holds bytes 0 to %d: its next chunk must start at %d, not %d", id, last.end, last.end, offset))
	case last.size < MinUploadChunkBytes:
		return 0, uploadLimit("order", api.BadRequest("upload %s: a chunk of %d bytes came before this one; only the last chunk may be under %d bytes", id, last.size, MinUploadChunkBytes))
	}
	msg := nats.NewMsg(subj)
	msg.Header.Set(subject.HeaderUploadOffset, strconv.FormatInt(offset, 10))
	// The id names the subject: JetStream finds duplicates over the whole
	// stream, and two indexes may have uploads of the same id.
	msg.Header.Set(nats.MsgIdHdr, subj+":"+strconv.FormatInt(offset, 10))
	msg.Data = chunk
	if _, err := s.JS.PublishMsg(ctx, msg); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeStreamStoreFailed {
			return 0, uploadLimit("staging", api.Errorf(api.CodeUnavailable, "plugin upload staging is full; try again later"))
		}
		return 0, fmt.Errorf("stage upload %s chunk at %d: %w", id, offset, err)
	}
	return end, nil
}

// checkStagingQuota refuses a new upload (subj) when its team has
// MaxStagedUploads others staged; uploads idle for UploadIdle are
// dropped first and do not count.
func (s *Store) checkStagingQuota(ctx context.Context, team, subj string) error {
	staged, err := s.stagedUploads(ctx, team)
	if err != nil {
		return err
	}
	delete(staged, subj)
	if len(staged) < MaxStagedUploads {
		return nil
	}
	for other := range staged {
		last, err := s.lastChunk(ctx, other)
		if err != nil {
			return err
		}
		if last.end > 0 && time.Since(last.at) < UploadIdle {
			continue
		}
		if err := s.Uploads.Purge(ctx, jetstream.WithPurgeSubject(other)); err != nil {
			return fmt.Errorf("drop abandoned upload %s: %w", other, err)
		}
		slog.Default().Info("dropped an abandoned plugin upload", "team", team, "subject", other, "idle", time.Since(last.at).Round(time.Second))
		delete(staged, other)
	}
	if len(staged) >= MaxStagedUploads {
		return uploadLimit("quota", &api.Error{Code: api.CodeOverloaded, RetryAfterMS: int(UploadIdle / time.Millisecond), Message: fmt.Sprintf(
			"team %q has %d plugin uploads staged, its quota of %d: finish or cancel them (quarry plugin push releases what it staged when it fails), or wait: an upload idle for %s is dropped",
			team, len(staged), MaxStagedUploads, UploadIdle)})
	}
	return nil
}

// chunkEnd is where an upload's last staged chunk ends, its size and
// when it was staged (zero: nothing staged).
type chunkEnd struct {
	end  int64
	size int
	at   time.Time
}

// lastChunk returns the last chunk staged on subj.
func (s *Store) lastChunk(ctx context.Context, subj string) (chunkEnd, error) {
	m, err := s.Uploads.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return chunkEnd{}, nil
	}
	if err != nil {
		return chunkEnd{}, fmt.Errorf("last chunk of %s: %w", subj, err)
	}
	off, err := strconv.ParseInt(m.Header.Get(subject.HeaderUploadOffset), 10, 64)
	if err != nil || off < 0 || off > MaxPluginBytes {
		return chunkEnd{}, fmt.Errorf("staged chunk %d of %s has a bad offset %q", m.Sequence, subj, m.Header.Get(subject.HeaderUploadOffset))
	}
	return chunkEnd{end: off + int64(len(m.Data)), size: len(m.Data), at: m.Time}, nil
}

// lockTeamUploads serializes the staging of one team's chunks on this
// process, so its quota is checked and used in one step; other teams'
// chunks do not wait.
func (s *Store) lockTeamUploads(team string) (unlock func()) {
	mu, _ := s.uploadLocks.LoadOrStore(team, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	return mu.(*sync.Mutex).Unlock
}

// stagedUploads returns the subjects of the uploads staged for team, with
// their chunk counts.
func (s *Store) stagedUploads(ctx context.Context, team string) (map[string]uint64, error) {
	info, err := s.Uploads.Info(ctx, jetstream.WithSubjectFilter(subject.UploadsOfTeam(team)))
	if err != nil {
		return nil, fmt.Errorf("staged uploads of team %q: %w", team, err)
	}
	if info.State.Subjects == nil {
		return map[string]uint64{}, nil
	}
	return info.State.Subjects, nil
}

// AssembleUpload reads a staged upload back in order. It fails with
// api.ErrNotFound if nothing was staged under id for index, and with
// api.ErrBadRequest if bytes are missing (a chunk lost or expired).
func (s *Store) AssembleUpload(ctx context.Context, team, index, id string) ([]byte, error) {
	if err := subject.ValidUploadID(id); err != nil {
		return nil, api.BadRequest("%v", err)
	}
	var out []byte
	var bad error // a chunk that does not fit, returned as is
	var pending int
	read := func(m jetstream.Msg) error {
		off, err := strconv.ParseInt(m.Headers().Get(subject.HeaderUploadOffset), 10, 64)
		switch {
		case err != nil || off < 0 || off > MaxPluginBytes:
			bad = fmt.Errorf("upload %s: chunk without a valid offset", id)
		case off+int64(len(m.Data())) <= int64(len(out)):
			return nil // a retried chunk already read
		case off != int64(len(out)):
			bad = api.BadRequest("upload %s is missing bytes %d to %d (a chunk was lost or expired): push the binary again", id, len(out), off)
		case len(out)+len(m.Data()) > MaxPluginBytes:
			bad = api.BadRequest("upload %s goes past the plugin size limit of %d bytes", id, MaxPluginBytes)
		default:
			out = append(out, m.Data()...)
		}
		return bad
	}
	// While a cluster member is lost, JetStream may not answer for a
	// moment (no responders, a leader being elected): read again then.
	err := untilReady(ctx, slog.Default(), "upload "+id, func(ctx context.Context) (err error) {
		out, bad = out[:0], nil
		pending, err = s.readSubject(ctx, subject.UploadsStream, subject.Upload(team, index, id), 0, read)
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

// DropUpload removes a staged upload (one that does not exist is no
// error).
func (s *Store) DropUpload(ctx context.Context, team, index, id string) error {
	if err := subject.ValidUploadID(id); err != nil {
		return api.BadRequest("%v", err)
	}
	if err := s.Uploads.Purge(ctx, jetstream.WithPurgeSubject(subject.Upload(team, index, id))); err != nil {
		return fmt.Errorf("drop upload %s: %w", id, err)
	}
	return nil
}
