package snapshot

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/klauspost/compress/zstd"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRoundTrip(t *testing.T) {
	files := map[string]string{"index_meta.json": `{"storage":"scorch"}`, "store/root.bolt": strings.Repeat("b", 5000), "store/000.zap": "zap"}
	src := writeTree(t, files)
	var buf bytes.Buffer
	digest, err := Pack(src, &buf)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if err := Unpack(bytes.NewReader(buf.Bytes()), dst, digest, 1<<20); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(got) != body {
			t.Fatalf("%s: %q %v", name, got, err)
		}
	}
}

// The digest covers every byte of the stream however the reader hands
// them out: read a byte or a few at a time (as an object store's chunks
// may arrive), the zstd decoder stops reading at the end of the tar, and
// the rest of the stream was drained around the digest (a real snapshot's
// digest failed to match now and then).
func TestRoundTripDigestCoversEveryByte(t *testing.T) {
	files := map[string]string{"index_meta.json": `{"storage":"scorch"}`, "store/root.bolt": strings.Repeat("b", 70000), "store/000.zap": strings.Repeat("zap", 30000)}
	src := writeTree(t, files)
	var buf bytes.Buffer
	digest, err := Pack(src, &buf)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]func() io.Reader{
		"one byte at a time": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(buf.Bytes())) },
		"half reads":         func() io.Reader { return iotest.HalfReader(bytes.NewReader(buf.Bytes())) },
		"all at once":        func() io.Reader { return bytes.NewReader(buf.Bytes()) },
	} {
		dst := filepath.Join(t.TempDir(), "out")
		if err := Unpack(r(), dst, digest, 64<<20); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func tarZst(t *testing.T, hdr *tar.Header, body string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := zstd.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(hdr); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(body))
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func TestUnpackRefuses(t *testing.T) {
	src := writeTree(t, map[string]string{"a": strings.Repeat("x", 100)})
	var good bytes.Buffer
	digest, err := Pack(src, &good)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := bytes.Clone(good.Bytes())
	corrupt[len(corrupt)-1] ^= 0xff
	cases := []struct {
		name   string
		data   []byte
		digest string
		max    int64
		want   string
	}{
		{"wrong digest", good.Bytes(), DigestPrefix + "00", 1 << 20, "digest mismatch"},
		{"corrupt bytes", corrupt, digest, 1 << 20, ""},
		{"over size", good.Bytes(), digest, 10, "over the limit"},
		{"escape", tarZst(t, &tar.Header{Name: "../evil", Size: 1, Mode: 0o600, Typeflag: tar.TypeReg}, "x"), "", 1 << 20, "escapes"},
		{"absolute", tarZst(t, &tar.Header{Name: "/etc/evil", Size: 1, Mode: 0o600, Typeflag: tar.TypeReg}, "x"), "", 1 << 20, "escapes"},
		{"symlink", tarZst(t, &tar.Header{Name: "l", Linkname: "/etc/passwd", Typeflag: tar.TypeSymlink}, ""), "", 1 << 20, "not a regular file"},
		{"garbage", []byte("not a snapshot"), "", 1 << 20, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.digest == "" { // the digest matches: what is checked is the content
				c.digest = digestOf(c.data)
			}
			dst := filepath.Join(t.TempDir(), "out")
			err := Unpack(bytes.NewReader(c.data), dst, c.digest, c.max)
			if err == nil {
				t.Fatal("accepted")
			}
			if c.want != "" && !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q, want %q", err, c.want)
			}
			if c.name == "wrong digest" && !errors.Is(err, ErrDigestMismatch) {
				t.Fatalf("%v is not ErrDigestMismatch", err)
			}
			if _, serr := os.Stat(dst); !os.IsNotExist(serr) {
				t.Fatal("target directory left behind")
			}
		})
	}
}

func digestOf(b []byte) string {
	h := sha256.Sum256(b)
	return DigestPrefix + hex.EncodeToString(h[:])
}

func FuzzUnpack(f *testing.F) {
	src := f.TempDir()
	os.WriteFile(filepath.Join(src, "a"), []byte("hello"), 0o600)
	var buf bytes.Buffer
	if _, err := Pack(src, &buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		// The digest matches, so the content itself is what is checked.
		_ = Unpack(bytes.NewReader(data), filepath.Join(root, "out"), digestOf(data), 1<<16)
		// Whatever the input, nothing may appear outside root/out.
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if e.Name() != "out" {
				t.Fatalf("wrote %s outside the target", e.Name())
			}
		}
	})
}
