package meta

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// DocsDescription is the documents stream's description while it takes
// writes.
const DocsDescription = "Quarry documents: one subject per document, latest kept"

// writesHeld begins the documents stream's description while writes are
// held (HoldWrites); the reason follows.
const writesHeld = "writes held: "

// HoldWrites makes the documents stream refuse every new write at once,
// answering it with an error (its MaxBytes set to what it holds, with
// discard new, so nothing it holds is removed), and records reason in its
// description for the client to give (WritesHeld): what a node does when
// the disk under JetStream is nearly full. Left to fill, the disk would
// fail a write inside JetStream, which then stops the stream's writes
// without an answer until the server restarts. Holding twice updates the
// reason.
func (s *Store) HoldWrites(ctx context.Context, reason string) error {
	info, err := s.Docs.Info(ctx)
	if err != nil {
		return fmt.Errorf("hold writes: %w", err)
	}
	cfg := info.Config
	cfg.MaxBytes = max(int64(info.State.Bytes), 1) // 0 is no limit
	cfg.Discard = jetstream.DiscardNew
	cfg.Description = writesHeld + reason
	if _, err := s.JS.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("hold writes: %w", err)
	}
	return nil
}

// ReleaseWrites makes the documents stream take writes again, as Open
// configures it (no byte limit, discard old); releasing writes not held
// changes nothing.
func (s *Store) ReleaseWrites(ctx context.Context) error {
	info, err := s.Docs.Info(ctx)
	if err != nil {
		return fmt.Errorf("release writes: %w", err)
	}
	cfg := info.Config
	if !strings.HasPrefix(cfg.Description, writesHeld) {
		return nil
	}
	cfg.MaxBytes, cfg.Discard, cfg.Description = -1, jetstream.DiscardOld, DocsDescription
	if _, err := s.JS.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("release writes: %w", err)
	}
	return nil
}

// WritesHeld returns why the documents stream holds writes (HoldWrites),
// or "" when it takes them.
func (s *Store) WritesHeld(ctx context.Context) (string, error) {
	info, err := s.Docs.Info(ctx)
	if err != nil {
		return "", err
	}
	reason, held := strings.CutPrefix(info.Config.Description, writesHeld)
	if !held {
		return "", nil
	}
	return reason, nil
}
