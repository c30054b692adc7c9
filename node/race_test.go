//go:build race

package node

// raceEnabled: the race detector is on (go test -race), which makes
// indexing several times slower; tests that index a lot index less.
const raceEnabled = true
