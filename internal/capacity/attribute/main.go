// Command attribute splits a CPU profile of a process running several of
// Quarry's roles (quarry bench --profile-dir) by role: each sample goes to
// the role whose code is on its stack. It reads the profile through
// `go tool pprof -traces`, so it needs nothing but the Go toolchain.
//
//	go run ./internal/capacity/attribute /tmp/cap/d20000-s4/quarry-closed.cpu.pprof
//
// With -merge, the profiles named are one: the turns of a setup's closed
// loop (quarry bench --turns), as pprof merges several profiles.
//
//	go run ./internal/capacity/attribute -merge /tmp/p/quarry-closed.*.cpu.pprof
//
// docs/scaling.md says how its shares become the capacity model's costs.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
)

// roles: the first whose prefix is on a sample's stack takes the sample.
var roles = []struct{ name, prefix string }{
	{"searcher", "github.com/quarrysearch/quarry/searcher."},
	{"searcher", "github.com/quarrysearch/quarry/internal/shard."},
	{"broker", "github.com/quarrysearch/quarry/broker."},
	{"broker", "github.com/quarrysearch/quarry/planner."},
	{"broker", "github.com/quarrysearch/quarry/plugins."},
	{"indexer", "github.com/quarrysearch/quarry/indexer."},
	{"client", "github.com/quarrysearch/quarry/client."},
	{"client", "github.com/quarrysearch/quarry/internal/loadgen."},
	{"nats-server", "github.com/nats-io/nats-server/v2/"},
	{"gc", "runtime.gcBgMarkWorker"},
}

func main() {
	args := os.Args[1:]
	merge := len(args) > 0 && args[0] == "-merge"
	if merge {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: attribute [-merge] PROFILE...")
		os.Exit(2)
	}
	if merge {
		if err := attribute(args...); err != nil {
			fmt.Fprintf(os.Stderr, "attribute %s: %v\n", strings.Join(args, " "), err)
			os.Exit(1)
		}
		return
	}
	for _, path := range args {
		if err := attribute(path); err != nil {
			fmt.Fprintf(os.Stderr, "attribute %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

// attribute prints the shares of the profiles at paths, merged into one.
func attribute(paths ...string) error {
	out, err := exec.Command("go", append([]string{"tool", "pprof", "-traces"}, paths...)...).Output()
	if err != nil {
		return fmt.Errorf("go tool pprof: %w", err)
	}
	by := map[string]time.Duration{}
	var total, value time.Duration
	role := ""
	flush := func() {
		if value > 0 {
			if role == "" {
				role = "other"
			}
			by[role] += value
			total += value
		}
		value, role = 0, ""
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "-----------+") {
			flush()
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		fn := fields[len(fields)-1]
		if len(fields) == 2 && value == 0 && role == "" && !strings.Contains(line, ":") {
			if d, err := time.ParseDuration(fields[0]); err == nil {
				value = d
			}
		}
		if value == 0 || role != "" {
			continue
		}
		for _, r := range roles {
			if strings.HasPrefix(fn, r.prefix) {
				role = r.name
				break
			}
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return err
	}
	if total == 0 {
		return fmt.Errorf("no samples")
	}
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return by[names[i]] > by[names[j]] })
	fmt.Printf("%s (%s of samples)\n", strings.Join(paths, " + "), total)
	for _, n := range names {
		fmt.Printf("  %-12s %6s  %s\n", n, strconv.FormatFloat(100*by[n].Seconds()/total.Seconds(), 'f', 1, 64)+"%", by[n])
	}
	return nil
}
