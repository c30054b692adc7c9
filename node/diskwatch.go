package node

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"
)

// DefaultMinFreeDisk is Config.MinFreeDisk's default: room for JetStream
// to finish what it is writing and for the indexes to merge, once writes
// are held.
const DefaultMinFreeDisk = 512 << 20

// DefaultDiskCheckInterval is Config.DiskCheckInterval's default.
const DefaultDiskCheckInterval = time.Second

// checkDisk fills in the free-disk watch's defaults, refusing a zero or
// negative interval.
func checkDisk(cfg *Config) error {
	if cfg.DiskCheckInterval < 0 {
		return fmt.Errorf("node: the disk check interval must be 0 (the default, %s) or positive, got %s", DefaultDiskCheckInterval, cfg.DiskCheckInterval)
	}
	if cfg.MinFreeDisk == 0 {
		cfg.MinFreeDisk = DefaultMinFreeDisk
	}
	if cfg.DiskCheckInterval == 0 {
		cfg.DiskCheckInterval = DefaultDiskCheckInterval
	}
	return nil
}

// diskWatch holds the documents stream's writes while the disk under the
// embedded JetStream, or under the node's data directory, has less than
// MinFreeDisk free (meta.Store.HoldWrites): a write is then refused at
// once with insufficient_storage naming the directory, and /readyz says
// writes are held. Left to fill, the disk would fail a write inside
// JetStream, which then takes no write on the stream, with no answer,
// until the server restarts. Writes are taken again once the space free
// is back above MinFreeDisk and a half, with no restart. The state is
// logged when it changes.
type diskWatch struct {
	n    *Node
	dirs []string
	held bool
	// reason is why writes are held, while they are.
	reason string
	// release ends the node's not-ready hold while writes are held.
	release func()
}

// freeBytes is the space an unprivileged process may still use on dir's
// file system.
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// run watches until ctx is done.
func (w *diskWatch) run(ctx context.Context) error {
	tick := time.NewTicker(w.n.cfg.DiskCheckInterval)
	defer tick.Stop()
	failed := false
	for {
		if err := w.check(ctx); err != nil && !failed && ctx.Err() == nil {
			w.n.cfg.Logger.Warn("disk watch", "err", err) // said once until it works again
			failed = true
		} else if err == nil {
			failed = false
		}
		select {
		case <-ctx.Done():
			if w.release != nil {
				w.release()
			}
			return nil
		case <-tick.C:
		}
	}
}

// check looks at the free space once, and holds or releases writes.
func (w *diskWatch) check(ctx context.Context) error {
	least, dir := int64(-1), ""
	for _, d := range w.dirs {
		free, err := freeBytes(d)
		if err != nil {
			return fmt.Errorf("free space of %s: %w", d, err)
		}
		if least < 0 || free < least {
			least, dir = free, d
		}
	}
	min := w.n.cfg.MinFreeDisk
	switch {
	case !w.held && least < min:
		reason := fmt.Sprintf("the disk of %s has %d MiB free, under the %d MiB this server keeps free (quarry serve --min-free-disk); writes resume by themselves once more is free",
			dir, least>>20, min>>20)
		// Not ready before the stream refuses writes, so that no write
		// is refused while /readyz still says ready (the other order
		// left a moment for one: CI saw it, as for the release below).
		release := w.n.Hold("writes held: " + reason)
		if err := w.n.store.HoldWrites(ctx, reason); err != nil {
			release()
			return err
		}
		w.held, w.reason, w.release = true, reason, release
		w.n.cfg.Logger.Error("disk nearly full: writes held", "dir", dir, "free", least, "min_free", min)
	case w.held && least >= min+min/2:
		// Ready again before the stream takes writes, so that no write
		// is taken while /readyz still says writes are held (the other
		// order left a moment for one: CI saw it).
		w.release()
		if err := w.n.store.ReleaseWrites(ctx); err != nil {
			w.release = w.n.Hold("writes held: " + w.reason)
			return err
		}
		w.held = false
		w.release = nil
		w.n.cfg.Logger.Info("disk space back: writes taken again", "dir", dir, "free", least, "min_free", min)
	}
	return nil
}

// watchedDirs are the directories whose disks the watch looks at: the
// embedded JetStream's store and the node's data directory, once each.
func watchedDirs(store, data string) []string {
	dirs := []string{store}
	if data != "" && data != store {
		dirs = append(dirs, data)
	}
	return slices.Compact(dirs)
}
