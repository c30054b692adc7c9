package main

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/internal/subject"
)

// quarry team set stores a team's limits and says so; setting a team no
// index belongs to (the demo's index is team index-menu, not menu) warns
// on stderr, naming the teams there are; bad limits exit 2.
func TestCLITeamSet(t *testing.T) {
	t.Parallel()
	url, c := cluster(t, false)
	if _, err := c.CreateIndex(context.Background(), "dishes", 1, nil); err != nil {
		t.Fatal(err)
	}
	nf := []string{"--nats", url}
	cases := []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"the index's team", []string{"index-dishes", "--rate", "2", "--burst", "1"}, 0, "team index-dishes: 2 searches/s (burst 1)", ""},
		{"the index's name", []string{"dishes", "--rate", "2"}, 0, "team dishes: 2 searches/s",
			`warning: no index belongs to team "dishes" yet, so its limits hold for no search until one does (an index's team is its --team, or index-NAME without one); the indexes' teams: index-dishes`},
		{"a negative rate", []string{"index-dishes", "--rate", "-1"}, 2, "", "rate must be 0 (no cap) or between 0.0167 (one search a minute) and 1e+06 searches/s, got -1"},
		// NaN compared false with both bounds: it passed, could not be
		// stored as JSON, and the CLI said "no rate cap" while the old
		// limits stayed.
		{"a rate of NaN", []string{"index-dishes", "--rate", "NaN"}, 2, "", "rate must be 0 (no cap) or between 0.0167 (one search a minute) and 1e+06 searches/s, got NaN"},
		// Accepted before: the team's second search was told to retry
		// after 277,777 hours.
		{"a rate under one search a minute", []string{"index-dishes", "--rate", "1e-9"}, 2, "", "rate must be 0 (no cap) or between 0.0167 (one search a minute) and 1e+06 searches/s, got 1e-09"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := cli(t, "", append(append([]string{"team", "set"}, tc.args...), nf...)...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errOut, tc.err) || (tc.err == "") != (errOut == "") {
				t.Errorf("team set %s: %d %q %q, want %d, %q and %q", strings.Join(tc.args, " "), code, out, errOut, tc.code, tc.out, tc.err)
			}
		})
	}
	if out, errOut, code := cli(t, "", append([]string{"team", "ls"}, nf...)...); code != 0 || !strings.Contains(out, "index-dishes  2 searches/s (burst 1) over the cluster, the broker's default in flight on each broker") {
		t.Errorf("team ls: %d %q %q", code, out, errOut)
	}
	// Settings an older quarry stored under laxer rules (a rate of 1e-9)
	// are refused by the brokers, which log it and hold the team to their
	// defaults: team ls says so rather than show a rate nobody enforces.
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(context.Background(), subject.TeamsBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), "index-old", []byte(`{"name":"index-old","rate":1e-9}`)); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := cli(t, "", append([]string{"team", "ls"}, nf...)...); code != 0 || !strings.Contains(out, "index-old     IGNORED by the brokers, which hold the team to their defaults (rate must be 0 (no cap) or between 0.0167 (one search a minute) and 1e+06 searches/s, got 1e-09): set it again; stored: 1e-09 searches/s") {
		t.Errorf("team ls with settings the brokers refuse: %d %q %q", code, out, errOut)
	}
}

// quarry token create gives a team token the scope --scope names (admin
// without one), refuses another scope naming the valid ones and any scope
// on an operator token, and token ls shows each token's scope.
func TestCLITokenScopes(t *testing.T) {
	t.Parallel()
	url, _ := cluster(t, false)
	nf := []string{"--nats", url}
	cases := []struct {
		args      []string
		code      int
		said      string // on stderr
		name      string // --name, and the token ls row to find
		lsFor, ls string // the row's FOR and SCOPE
	}{
		{[]string{"--team", "food", "--scope", "search", "--name", "front-end"}, 0, "for team food, scope search (shown once", "front-end", "team food", "search"},
		{[]string{"--team", "food", "--scope", "write", "--name", "loader"}, 0, "for team food, scope write", "loader", "team food", "write"},
		{[]string{"--team", "food", "--scope", "admin", "--name", "ci"}, 0, "for team food, scope admin", "ci", "team food", "admin"},
		{[]string{"--team", "food", "--name", "default"}, 0, "for team food, scope admin", "default", "team food", "admin"},
		{[]string{"--operator", "--name", "ops"}, 0, "for operators (shown once", "ops", "operators", "everything"},
		{[]string{"--team", "food", "--scope", "read", "--name", "bad"}, 2, "quarry token create: --scope read: want search, write, admin", "", "", ""},
		{[]string{"--team", "food", "--scope", "", "--name", "empty"}, 0, "for team food, scope admin", "empty", "team food", "admin"},
		{[]string{"--operator", "--scope", "search", "--name", "bad-ops"}, 2, "quarry token create: --operator takes no --scope (an operator token may do everything)", "", "", ""},
	}
	for _, tc := range cases {
		out, errOut, code := cli(t, "", append(append([]string{"token", "create"}, tc.args...), nf...)...)
		if code != tc.code || !strings.Contains(errOut, tc.said) || (code == 0) != strings.HasPrefix(out, "qk_") {
			t.Errorf("token create %s: %d %q %q, want %d and %q", strings.Join(tc.args, " "), code, out, errOut, tc.code, tc.said)
		}
	}
	out, errOut, code := cli(t, "", append([]string{"token", "ls"}, nf...)...)
	if code != 0 || !strings.HasPrefix(out, "ID") || !strings.Contains(strings.Split(out, "\n")[0], "SCOPE") {
		t.Fatalf("token ls: %d %q %q", code, out, errOut)
	}
	rows := map[string]string{} // name → "FOR SCOPE"
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(l)
		switch {
		case len(f) >= 6 && f[1] == "team":
			rows[f[4]] = f[1] + " " + f[2] + " " + f[3]
		case len(f) >= 5 && f[1] == "operators":
			rows[f[3]] = f[1] + " " + f[2]
		default:
			t.Errorf("token ls: a row of neither a team nor operators: %q", l)
		}
	}
	for _, tc := range cases {
		if want := tc.lsFor + " " + tc.ls; tc.name != "" && rows[tc.name] != want {
			t.Errorf("token ls: %s is %q, want %q\n%s", tc.name, rows[tc.name], want, out)
		}
	}
	if len(rows) != 6 {
		t.Errorf("token ls lists %d tokens, want the 6 made:\n%s", len(rows), out)
	}
	if out, _, code := cli(t, "", append([]string{"token", "ls", "--json"}, nf...)...); code != 0 || !strings.Contains(out, `"scope": "search"`) {
		t.Errorf("token ls --json: %d %s", code, out)
	}
}
