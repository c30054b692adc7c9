package snapshot

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// ErrDigestMismatch reports a snapshot whose bytes do not match the digest
// its manifest records.
var ErrDigestMismatch = errors.New("snapshot digest mismatch")

// DigestPrefix starts every digest string.
const DigestPrefix = "sha256="

// Pack writes every regular file under dir to w as a zstd-compressed tar
// and returns the digest of the bytes written.
func Pack(dir string, w io.Writer) (digest string, err error) {
	h := sha256.New()
	zw, err := zstd.NewWriter(io.MultiWriter(w, h), zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return "", err
	}
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("pack %s: not a regular file", path)
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o600, Size: st.Size(), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("pack %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return DigestPrefix + hex.EncodeToString(h.Sum(nil)), nil
}

// Unpack reads a stream made by Pack into dir (which must not exist yet),
// refusing entries that escape dir, are not regular files, or would take the
// unpacked size over maxBytes. It checks the stream's digest against want
// and, on any error, removes dir.
func Unpack(r io.Reader, dir, want string, maxBytes int64) (err error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	// The stream is checked whole before any of it is read: it is copied
	// to a file beside dir while its digest is made. (The digest used to
	// be made of what the decompressor read, and the stream's tail was
	// drained around it: now and then a snapshot's digest did not match
	// its own bytes.)
	f, err := os.CreateTemp(filepath.Dir(dir), ".unpack-*")
	if err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, maxBytes+1))
	if err != nil {
		return fmt.Errorf("unpack: read the snapshot: %w", err)
	}
	if n > maxBytes {
		return fmt.Errorf("unpack: snapshot is over the limit of %d bytes", maxBytes)
	}
	if got := DigestPrefix + hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%w: got %s, manifest says %s", ErrDigestMismatch, got, want)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	zr, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(max(maxBytes, 1<<20))))
	if err != nil {
		return err
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var total int64
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("unpack: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			return fmt.Errorf("unpack: entry %q is not a regular file", hdr.Name)
		}
		name := filepath.FromSlash(hdr.Name)
		if !filepath.IsLocal(name) || strings.Contains(hdr.Name, "\\") {
			return fmt.Errorf("unpack: entry %q escapes the target directory", hdr.Name)
		}
		total += hdr.Size
		if hdr.Size < 0 || total > maxBytes {
			return fmt.Errorf("unpack: snapshot is over the limit of %d bytes", maxBytes)
		}
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("unpack: %w", err)
		}
		_, err = io.CopyN(f, tr, hdr.Size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("unpack %q: %w", hdr.Name, err)
		}
	}
	return nil
}
