package main

import (
	"testing"
)

// The HTTP door's flags are checked before anything starts, and a cap
// that does not fit the open-file limit names the flags to change.
func TestHTTPDoorFlags(t *testing.T) {
	// Not parallel: serve and the roles set process-wide knobs
	// (cmdline.Runtime.Apply makes their logger the default one).
	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"an origin without a scheme", []string{"serve", "--data", t.TempDir(), "--nats-port", "-1", "--http-origins", "evil.example"}, 1,
			[]string{`--http-origins: origin "evil.example": want scheme://host[:port]`}},
		{"a host with a path", []string{"broker", "--nats", "nats://127.0.0.1:1", "--data", t.TempDir(), "--http", "127.0.0.1:0", "--http-hosts", "a/b"}, 1,
			[]string{`--http-hosts: host "a/b"`}},
		{"a negative cap", []string{"serve", "--data", t.TempDir(), "--nats-port", "-1", "--http-max-conns", "-1"}, 1,
			[]string{"--http-max-conns must be 0 (the default) or positive, got -1"}},
		{"no idle timeout", []string{"serve", "--data", t.TempDir(), "--nats-port", "-1", "--http-idle-timeout", "0s"}, 1,
			[]string{"--http-idle-timeout must be positive"}},
		{"a cap over the open-file limit", []string{"serve", "--data", t.TempDir(), "--nats-port", "-1", "--http", "127.0.0.1:0", "--http-max-conns", "2000000000"}, 1,
			[]string{"HTTP connections and a reserve of", "over the limit of", "change --http-max-conns, --http-max-conns-per-client, --http-fd-reserve"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := cli(t, "", c.args...)
			if code != c.code {
				t.Errorf("exit status %d, want %d", code, c.code)
			}
			oneLine(t, stderr, c.want...)
		})
	}
}
